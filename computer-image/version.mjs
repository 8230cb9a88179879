// Which sources an image was built from, as one short hash: the build records it as the image's
// `cubicle.image.version` label (scripts/lib/docker-engine.mjs), and the supervisor compares the
// computer image's label with its own copy of these sources (`cubicle doctor`: "image current").
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** This folder: the computer image's build context. */
export const COMPUTER_IMAGE_DIR = dirname(fileURLToPath(import.meta.url));

const sha256 = (data) => createHash("sha256").update(data).digest("hex");

/** Regular files under `folder`, as paths relative to `base`; symbolic links are not content. */
function filesUnder(base, folder) {
  if (!existsSync(join(base, folder))) return [];
  return readdirSync(join(base, folder)).flatMap((name) => {
    const path = `${folder}/${name}`;
    const stat = lstatSync(join(base, path));
    if (stat.isDirectory()) return filesUnder(base, path);
    return stat.isFile() ? [path] : [];
  });
}

/**
 * The first 12 hex digits of the hash of a listing of the build context's Dockerfile and rootfs/
 * files, each with its own hash, in byte order of their paths (what `sha256sum` over them prints).
 */
export function imageVersion(context) {
  const files = [
    ...(existsSync(join(context, "Dockerfile")) ? ["Dockerfile"] : []),
    ...filesUnder(context, "rootfs"),
  ];
  const listing = files
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    .map((file) => `${sha256(readFileSync(join(context, file)))}  ${file}\n`)
    .join("");
  return sha256(listing).slice(0, 12);
}
