// The server the Go test TestTypeScriptClient (cmd/memgate) started.
import { randomUUID } from "node:crypto";

export const url = process.env.MEMGATE_URL;
export const operator = process.env.MEMGATE_OPERATOR_TOKEN;
export const agent = process.env.MEMGATE_AGENT_TOKEN;
export const restricted = process.env.MEMGATE_RESTRICTED_TOKEN;
export const skip = !url || !agent ? "run by the Go test TestTypeScriptClient" : false;
export const uid = () => "u-" + randomUUID().slice(0, 8);
