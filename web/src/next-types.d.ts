// Next's ambient types (CSS modules, images), which `next build` would otherwise only write into the
// untracked next-env.d.ts: the type check runs on a clean clone before any build.
/// <reference types="next" />
/// <reference types="next/image-types/global" />
