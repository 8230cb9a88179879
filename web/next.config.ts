import type { NextConfig } from "next";

const config: NextConfig = {
  // Several builds of one checkout can sit side by side (e.g. a helper checking a change while the
  // suite runs); the default is Next's own `.next`.
  distDir: process.env.NEXT_DIST_DIR || ".next",
  // Type checking is the workspace's `tsc -p web` step (npm run typecheck); the build only bundles.
  typescript: { ignoreBuildErrors: true },
  // Responses are forwarded from the api as they stream (shell output); compressing would buffer them.
  compress: false,
  poweredByHeader: false,
  reactStrictMode: true,
  // The recording player reads recordings with the proxy's own format module (TypeScript source).
  transpilePackages: ["@cubicle/proxy"],
};

export default config;
