"use client";

import { useRouter } from "next/navigation";
import { type ReactNode, useEffect } from "react";
import { ErrorNote, Loading } from "@/ui/feedback.tsx";
import { type Person, useMe } from "./session.ts";

/** Renders its children for a signed-in person; sends anyone else to the sign-in page. */
export function SignedIn({ children }: { children: (me: Person) => ReactNode }) {
  const router = useRouter();
  const me = useMe();
  useEffect(() => {
    if (me.data === null) router.replace("/sign-in");
  }, [me.data, router]);
  if (me.error)
    return (
      <main>
        <ErrorNote error={me.error} />
      </main>
    );
  if (!me.data)
    return (
      <main>
        <Loading what="your account" />
      </main>
    );
  return <>{children(me.data)}</>;
}
