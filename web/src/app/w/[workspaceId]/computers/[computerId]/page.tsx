"use client";

import { useParams } from "next/navigation";
import { ComputerPage } from "@/computers/computer-page.tsx";

export default function Page() {
  const { computerId } = useParams<{ computerId: string }>();
  return <ComputerPage computerId={computerId} />;
}
