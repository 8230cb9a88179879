import { AuthForm } from "@/auth/auth-form.tsx";

export const metadata = { title: "Sign in · Cubicle" };

export default function SignInPage() {
  return <AuthForm mode="sign-in" />;
}
