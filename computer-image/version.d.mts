/** This folder: the computer image's build context. */
export const COMPUTER_IMAGE_DIR: string;
/** The short hash of an image build context's sources, as its `cubicle.image.version` label records it. */
export function imageVersion(context: string): string;
