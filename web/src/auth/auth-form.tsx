"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { type FormEvent, useState } from "react";
import { api, unwrap } from "@/api/client.ts";
import { CardPage } from "@/ui/card-page.tsx";
import { ErrorNote } from "@/ui/feedback.tsx";

const MIN_PASSWORD = 10;

/** Sign-up and sign-in: one form, the name field only when signing up. */
export function AuthForm({ mode }: { mode: "sign-in" | "sign-up" }) {
  const router = useRouter();
  const client = useQueryClient();
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const submit = useMutation({
    mutationFn: () =>
      mode === "sign-up"
        ? unwrap(api.POST("/api/auth/sign-up/email", { body: { name, email, password } }))
        : unwrap(api.POST("/api/auth/sign-in/email", { body: { email, password } })),
    onSuccess: async () => {
      await client.invalidateQueries();
      router.push("/");
    },
  });
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    submit.mutate();
  };
  const signingUp = mode === "sign-up";
  return (
    <CardPage title={signingUp ? "Create your account" : "Sign in"}>
      <form className="stack" onSubmit={onSubmit} aria-label={signingUp ? "Sign up" : "Sign in"}>
        {signingUp ? (
          <div className="field">
            <label htmlFor="name">Name</label>
            <input
              id="name"
              autoComplete="name"
              required
              maxLength={100}
              value={name}
              onChange={(e) => setName(e.target.value)}
            />
          </div>
        ) : null}
        <div className="field">
          <label htmlFor="email">Email</label>
          <input
            id="email"
            type="email"
            autoComplete="email"
            required
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor="password">Password</label>
          <input
            id="password"
            type="password"
            autoComplete={signingUp ? "new-password" : "current-password"}
            required
            minLength={MIN_PASSWORD}
            aria-describedby={signingUp ? "password-hint" : undefined}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          {signingUp ? (
            <span id="password-hint" className="hint">
              At least {MIN_PASSWORD} characters.
            </span>
          ) : null}
        </div>
        <ErrorNote error={submit.error} />
        <button type="submit" className="primary" disabled={submit.isPending}>
          {submit.isPending ? "Please wait…" : signingUp ? "Sign up" : "Sign in"}
        </button>
      </form>
      <p className="small muted">
        {signingUp ? (
          <>
            Already have an account? <Link href="/sign-in">Sign in</Link>
          </>
        ) : (
          <>
            New here? <Link href="/sign-up">Create an account</Link>
          </>
        )}
      </p>
    </CardPage>
  );
}
