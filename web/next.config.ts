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
  // TypeScript sources bundled into the dashboard: the recording format its player reads (proxy), the
  // screen element its embed page serves (viewer), the origin rule its embedding form checks (config).
  transpilePackages: ["@cubicle/config", "@cubicle/proxy", "@cubicle/viewer"],
  async headers() {
    return [
      {
        // A framed dashboard could be clickjacked into taking over a screen. Only the embed page may be
        // framed, by its workspace's embed origins: src/proxy.ts gives it its own frame-ancestors.
        source: "/((?!embed/).*)",
        headers: [
          { key: "X-Frame-Options", value: "DENY" },
          { key: "Content-Security-Policy", value: "frame-ancestors 'none'" },
        ],
      },
    ];
  },
};

export default config;
