// `npm run images`: builds cubicle-api, cubicle-proxy, cubicle-supervisor and cubicle-web (and the
// computer image they run computers from) with no image registry, then prints their sizes.

import { ensureComputerImage, ensureDockerEngine, ensureServiceImages } from "./lib/docker-engine.mjs";
import { ensureSystemPackages } from "./lib/system-packages.mjs";

ensureSystemPackages("images");
await ensureDockerEngine();
await ensureComputerImage();
const sizes = ensureServiceImages();
console.log("\nImages:");
for (const [image, bytes] of Object.entries(sizes)) {
  console.log(`  ${image.padEnd(28)} ${(bytes / 1024 / 1024).toFixed(0).padStart(5)} MiB`);
}
