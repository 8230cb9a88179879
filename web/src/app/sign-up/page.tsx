import { AuthForm } from "@/auth/auth-form.tsx";

export const metadata = { title: "Sign up · Cubicle" };

export default function SignUpPage() {
  return <AuthForm mode="sign-up" />;
}
