// oidc-provider ships no types: src/oidc/library.ts describes the parts of its API the service uses.
declare module 'oidc-provider';
