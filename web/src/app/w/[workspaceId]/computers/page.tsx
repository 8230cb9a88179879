import { ComputersTable } from "@/computers/computers-table.tsx";
import { PageHeader } from "@/ui/app-shell.tsx";

export default function Page() {
  return (
    <>
      <PageHeader
        title="Computers"
        description="The Team Computer and the bots' Private Computers: what they are doing, who uses which screen."
      />
      <ComputersTable />
    </>
  );
}
