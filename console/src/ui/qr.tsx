import { encode } from 'uqr';

/**
 * A QR code drawn here as SVG, from the matrix uqr computes: nothing leaves the page (the text may be
 * a secret, such as an otpauth:// URL) and nothing is inline but the drawing itself. Dark modules are
 * one path of unit squares on a white ground, with the four-module quiet zone readers expect.
 */
export function QrCode(props: { value: string; label: string }) {
  const { data } = encode(props.value, { ecc: 'M', border: 4 });
  const size = data.length;
  let path = '';
  data.forEach((row, y) =>
    row.forEach((dark, x) => {
      if (dark) path += `M${x} ${y}h1v1h-1z`;
    }),
  );
  return (
    <svg class="qr" viewBox={`0 0 ${size} ${size}`} role="img" aria-label={props.label} shape-rendering="crispEdges">
      <rect width={size} height={size} fill="#ffffff" />
      <path d={path} fill="#000000" />
    </svg>
  );
}
