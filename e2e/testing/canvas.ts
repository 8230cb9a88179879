import type { Page } from "playwright-core";

/** The canvas as noVNC drew it on the page: how many colours it holds, and a fingerprint of its pixels. */
export function canvasSummary(page: Page): Promise<{ colours: number; fingerprint: string }> {
  return page.evaluate(() => {
    const canvas = document.querySelector("#screen canvas") as HTMLCanvasElement | null;
    if (!canvas || canvas.width === 0) return { colours: 0, fingerprint: "" };
    const { data } = (canvas.getContext("2d") as CanvasRenderingContext2D).getImageData(
      0,
      0,
      canvas.width,
      canvas.height,
    );
    const colours = new Set<number>();
    let hash = 0;
    for (let i = 0; i < data.length; i += 4) {
      const pixel = ((data[i] ?? 0) << 16) | ((data[i + 1] ?? 0) << 8) | (data[i + 2] ?? 0);
      colours.add(pixel);
      hash = (Math.imul(hash, 31) + pixel) | 0;
    }
    return { colours: colours.size, fingerprint: `${canvas.width}x${canvas.height}:${hash}` };
  });
}
