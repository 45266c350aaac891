/** @type {import('next').NextConfig} */
const nextConfig = {
  // Compression would buffer the Server-Sent Events of /api/sessions/[id]/events.
  compress: false,
  poweredByHeader: false,
  reactStrictMode: true,
};

export default nextConfig;
