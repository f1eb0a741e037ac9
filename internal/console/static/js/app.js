// app.js: sign-in, sign-out and the screen router (#/name/arg).
import { call, setSession } from "./api.js";
import { h, clear, failed, toast } from "./ui.js";
import queue from "./queue.js";
import memories from "./memories.js";
import files from "./files.js";
import graph from "./graph.js";
import audit from "./audit.js";
import principals from "./principals.js";
import forget from "./forget.js";
import health from "./health.js";

const screens = { queue, memories, files, graph, audit, principals, forget, health };
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const signout = document.getElementById("signout");
let current = null; // the running screen's cleanup, if any

function signedOut(msg) {
  setSession("");
  nav.hidden = true; signout.hidden = true; who.textContent = "";
  if (current) { current(); current = null; }
  const token = h("input", { id: "token", type: "password", autocomplete: "off", required: true, spellcheck: "false" });
  const err = h("p", { role: "alert", class: "err" });
  const form = h("form", { class: "card signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "Sign in to memgate"),
    h("p", {}, "Paste an operator token. It is exchanged for a session cookie and not kept by this page."),
    h("label", { for: "token" }, "Operator token"), token,
    h("div", { class: "bar" }, h("button", { type: "submit", class: "primary" }, "Sign in")), err);
  if (msg) err.textContent = msg;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const t = token.value;
    token.value = ""; // the token leaves the page as soon as it is sent
    try {
      signedIn(await call("POST", "/console/session", { token: t }));
    } catch (e) {
      err.textContent = e.message;
      token.focus();
    }
  });
  clear(main, form);
  token.focus();
}

function signedIn(info) {
  setSession(info.csrf_token, () => signedOut("Your session ended. Sign in again."));
  nav.hidden = false; signout.hidden = false;
  who.textContent = "Operator " + info.principal.name;
  if (!location.hash || location.hash === "#/") location.hash = "#/queue"; else route();
}

function route() {
  if (nav.hidden) return;
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  const screen = screens[name] || queue;
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === "#/" + (screens[name] ? name : "queue")) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  if (current) { current(); current = null; }
  clear(main);
  try {
    current = screen(main, rest.map(decodeURIComponent)) || null;
  } catch (e) { clear(main, failed(e)); }
  main.focus({ preventScroll: true });
}

signout.addEventListener("click", async () => {
  try { await call("DELETE", "/console/session"); } catch (e) { toast(e.message); }
  signedOut("Signed out.");
});
window.addEventListener("hashchange", route);
// Alt+1..8 jump between screens.
document.addEventListener("keydown", (ev) => {
  if (!ev.altKey || nav.hidden) return;
  const a = nav.querySelector(`a[data-key="${ev.key}"]`);
  if (a) { ev.preventDefault(); location.hash = a.getAttribute("href"); }
});

(async () => {
  try { signedIn(await call("GET", "/console/session")); } catch { signedOut(""); }
})();
