import type { KeyboardEvent, ReactNode } from "react";

/**
 * A download the browser does itself: a plain same-origin link with `download`, so the session cookie
 * goes along and the file is saved, not opened. A checkpoint's archive can be hundreds of megabytes,
 * which the browser streams to disk; held in the page's memory first it would not fit. It acts like a button (it does something rather than
 * going somewhere), so it is one for assistive technology, and Space activates it as on any button.
 */
export function DownloadLink({
  href,
  title,
  children,
}: {
  href: string;
  title?: string;
  children: ReactNode;
}) {
  const onKeyDown = (event: KeyboardEvent<HTMLAnchorElement>) => {
    if (event.key === " ") {
      event.preventDefault();
      event.currentTarget.click();
    }
  };
  return (
    // biome-ignore lint/a11y/useSemanticElements: a link is what makes the browser save the answer with the cookie
    <a
      className="button"
      role="button"
      href={href}
      download
      title={title}
      aria-label={title}
      onKeyDown={onKeyDown}
    >
      {children}
    </a>
  );
}
