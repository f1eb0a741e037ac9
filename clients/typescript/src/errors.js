// Errors: memgate's one error shape, {"error": {"code", "message",
// "details"}}, becomes a MemgateError (or the subclass for its code)
// carrying the code, the message, the field the server names, the status.

export class MemgateError extends Error {
  constructor(message, { status = 0, code = "", field, details = {}, retryAfter } = {}) {
    super(message);
    this.name = "MemgateError";
    this.status = status;
    this.code = code;
    this.field = field;
    this.details = details;
    this.retryAfter = retryAfter;
  }
}

const kinds = {};
function kind(name, code) {
  const C = class extends MemgateError {
    constructor(message, opts) {
      super(message, opts);
      this.name = name;
    }
  };
  Object.defineProperty(C, "name", { value: name });
  if (code) kinds[code] = C;
  return C;
}

export const InvalidArgument = kind("InvalidArgument", "invalid_argument");
export const Unauthenticated = kind("Unauthenticated", "unauthenticated");
export const PermissionDenied = kind("PermissionDenied", "permission_denied");
export const NotFound = kind("NotFound", "not_found");
export const VersionConflict = kind("VersionConflict", "version_conflict");
export const Conflict = kind("Conflict", "conflict");
export const TooLarge = kind("TooLarge", "too_large");
export const GateRejected = kind("GateRejected", "gate_rejected");
export const RateLimited = kind("RateLimited", "rate_limited");
export const Unavailable = kind("Unavailable", "unavailable");
export const BadResponse = kind("BadResponse");
export const TransportError = kind("TransportError");

export function errorFromBody(status, body, retryAfter) {
  const err = body && typeof body === "object" ? body.error : undefined;
  if (!err || typeof err !== "object") {
    return new BadResponse(`HTTP ${status} without memgate's error body`, { status, retryAfter });
  }
  const details = err.details && typeof err.details === "object" ? err.details : {};
  const field = typeof details.field === "string" ? details.field : undefined;
  const C = kinds[err.code] ?? MemgateError;
  return new C(String(err.message ?? ""), { status, code: String(err.code ?? ""), field, details, retryAfter });
}
