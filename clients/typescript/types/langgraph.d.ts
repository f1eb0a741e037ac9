import { BaseStore, type Operation, type OperationResults } from "@langchain/langgraph";
import { Client } from "./index.js";

/**
 * A LangGraph.js store backed by memgate memory files. A namespace's first
 * elements set the scope keys named by scopeKeys (default ["user_id"]).
 */
export declare class MemgateStore extends BaseStore {
  constructor(client: Client, options?: { scopeKeys?: Array<"user_id" | "agent_id" | "app_id" | "project_id" | "session_id"> });
  batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>>;
}
