import type { ReactNode } from "react";

import { Chat } from "@/components/Chat";

export default function Page(): ReactNode {
  return <Chat />;
}
