import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { User } from './api';

/** The signed-in person, as GET /api/auth/me answered when the console started; `refresh` asks again. */
export interface Me {
  user: User;
  isAdmin: boolean;
  refresh(): Promise<void>;
}

export const MeContext = createContext<Me | undefined>(undefined);

export function useMe(): Me {
  const me = useContext(MeContext);
  if (!me) throw new Error('useMe outside the signed-in console');
  return me;
}
