/** The bench's synthetic home: many files of mixed sizes in nested folders, random (incompressible) contents. */
import { randomBytes, randomInt } from "node:crypto";
import { promises as fs } from "node:fs";
import { join } from "node:path";

export interface SyntheticHome {
  dir: string;
  files: string[];
  totalBytes: number;
}

/** File sizes drawn log-uniformly (1 to ~2,000 units), scaled so they add up to `totalBytes`. */
function fileSizes(count: number, totalBytes: number): number[] {
  const weights = Array.from({ length: count }, () => Math.exp(Math.random() * Math.log(2_000)));
  const sum = weights.reduce((a, b) => a + b, 0);
  return weights.map((weight) => Math.max(1, Math.round((weight / sum) * totalBytes)));
}

export async function buildHome(dir: string, fileCount: number, totalBytes: number): Promise<SyntheticHome> {
  const sizes = fileSizes(fileCount, totalBytes);
  const files: string[] = [];
  let written = 0;
  for (let i = 0; i < fileCount; i += 1) {
    const path = join(`project-${i % 25}`, `module-${i % 7}`, `file-${i}.bin`);
    const size = sizes[i] ?? 1;
    await fs.mkdir(join(dir, path, ".."), { recursive: true });
    await fs.writeFile(join(dir, path), randomBytes(size), { mode: i % 10 === 0 ? 0o755 : 0o644 });
    files.push(path);
    written += size;
  }
  await fs.mkdir(join(dir, ".cache", "empty"), { recursive: true });
  await fs.symlink("project-0", join(dir, "current"));
  return { dir, files, totalBytes: written };
}

/** Rewrites `fraction` of the files with new contents of the same size. */
export async function changeFiles(home: SyntheticHome, fraction: number): Promise<number> {
  const count = Math.max(1, Math.round(home.files.length * fraction));
  const chosen = new Set<number>();
  while (chosen.size < count) chosen.add(randomInt(home.files.length));
  for (const index of chosen) {
    const path = join(home.dir, home.files[index] ?? "");
    const { size } = await fs.stat(path);
    await fs.writeFile(path, randomBytes(size));
  }
  return count;
}
