import type { ReactNode } from "react";
import { THEME_SCRIPT } from "@/ui/theme.tsx";
import { Providers } from "./providers.tsx";
import "./globals.css";

export const metadata = {
  title: "Cubicle",
  description: "Bot computers: watch them live, take over when needed.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en" suppressHydrationWarning>
      <head>
        {/* biome-ignore lint/security/noDangerouslySetInnerHtml: a constant script that applies the saved theme before the first paint */}
        <script dangerouslySetInnerHTML={{ __html: THEME_SCRIPT }} />
      </head>
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
