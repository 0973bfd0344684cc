// The REST API as the pages read it: one fetch wrapper that sends the visitor's token.
const TOKEN_KEY = "strata.token";

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
  offered = null;
}

let offered = null;

// What this server offers the visitor: builds (pipelines are configured) and what the
// token may do ("write", "read" or "none"). Asked once per token.
export function offer() {
  if (!offered) {
    // A failed ask offers nothing this time, and is asked again on the next page.
    offered = api("/strata/server").catch(() => {
      offered = null;
      return { builds: false, tokens: true, access: "none" };
    });
  }
  return offered;
}

// `path` is under /api/v1 unless it starts with /api/ itself (the v2beta search).
export async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  const url = path.startsWith("/api/") ? path : `/api/v1${path}`;
  const response = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { message: text };
  }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

// The same, but null for a 404 or 400 (a part of a page that may not apply).
export async function maybe(path) {
  try {
    return await api(path);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400 || e.status === 410)) {
      return null;
    }
    throw e;
  }
}

export const enc = encodeURIComponent;
