import { PageHeader } from "@/ui/app-shell.tsx";

export default function Page() {
  return <PageHeader title="bots" />;
}
