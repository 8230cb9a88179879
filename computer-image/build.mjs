// Builds the Docker computer image by hand: `node computer-image/build.mjs`.
// Installs docker.io and debootstrap when missing, starts the Docker engine when needed, builds debian:bookworm-slim air-gapped when it cannot be
// pulled, then builds cubicle-computer:latest from this directory.
import { ensureComputerImage, ensureDockerEngine } from "../scripts/lib/docker-engine.mjs";
import { ensureSystemPackages } from "../scripts/lib/system-packages.mjs";

ensureSystemPackages("start");

await ensureDockerEngine();
await ensureComputerImage();
