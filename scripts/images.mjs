// `npm run images`: builds cubicle-api, cubicle-proxy, cubicle-supervisor, cubicle-web and
// cubicle-postgres (and the computer image they run computers from) with no image registry, then
// prints their sizes.

import { ensureComputerImage, ensureDockerEngine, ensureServiceImages } from "./lib/docker-engine.mjs";
import { ensureSystemPackages } from "./lib/system-packages.mjs";

ensureSystemPackages("images");
await ensureDockerEngine();
await ensureComputerImage();
ensureServiceImages();
