// principals.js: agents (create with trust, change trust, token shown
// once, rotate, revoke) and gateway users (create, key shown once,
// rotate, revoke).
import { get, post, del, patch } from "./api.js";
import { h, clear, load, empty, toast, when, field, shownOnce, confirmDialog } from "./ui.js";

const TRUST = ["standard", "trusted", "restricted", "read_only"];

export default function principals(main) {
  const secret = h("div", { id: "secret-out" });
  const agents = h("div", { id: "agents" }), users = h("div", { id: "users" });
  const aname = h("input", { id: "agent-name", required: true, maxlength: 64, size: 18 });
  const trust = h("select", { id: "agent-trust" }, TRUST.map((t) => h("option", {}, t)));
  const aform = h("form", { class: "bar" }, field("Agent name", aname), field("Trust", trust), h("button", { type: "submit", class: "primary" }, "Create agent"));
  aform.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try { const a = await post("/v1/agents", { name: aname.value, trust: trust.value }); clear(secret, shownOnce("Token of agent " + a.name, a.token)); aname.value = ""; showAgents(); } catch (e) { toast(e.message); }
  });
  const uid = h("input", { id: "user-id", required: true, size: 18 });
  const uform = h("form", { class: "bar" }, field("Gateway user id", uid), h("button", { type: "submit", class: "primary" }, "Create user"));
  uform.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try { const u = await post("/users", { user_id: uid.value }); clear(secret, shownOnce("Key of user " + u.user_id, u.user_key)); uid.value = ""; showUsers(); } catch (e) { toast(e.message); }
  });
  const showAgents = () => load(agents, "agents", async () => {
    const r = await get("/v1/agents");
    if (!r.agents.length) { clear(agents, empty("No agents yet.")); return; }
    clear(agents, h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Agents" }, h("table", {}, h("thead", {}, h("tr", {}, ["Name", "Trust", "Created", "State", ""].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, r.agents.map((a) => h("tr", { "data-agent": a.name }, h("td", {}, a.name), h("td", {}, trustPicker(a)), h("td", {}, when(a.created_at)),
        h("td", { class: "state-cell" }, a.revoked_at ? "revoked " + when(a.revoked_at) : "active"),
        h("td", {}, h("button", { type: "button", "data-act": "rotate", onclick: () => rotate("/v1/agents/" + encodeURIComponent(a.id) + "/rotate", "agent " + a.name) }, a.revoked_at ? "Reinstate (new token)" : "Rotate"),
          a.revoked_at ? null : h("button", { type: "button", class: "danger", "data-act": "revoke", onclick: () => revoke("/v1/agents/" + encodeURIComponent(a.id), "agent " + a.name, showAgents) }, "Revoke"))))))));
  });
  const showUsers = () => load(users, "users", async () => {
    const r = await get("/users");
    const us = r.users || [];
    if (!us.length) { clear(users, empty("No gateway users yet.")); return; }
    clear(users, h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": "Gateway users" }, h("table", {}, h("thead", {}, h("tr", {}, ["User", "Created", "State", ""].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, us.map((u) => h("tr", {}, h("td", {}, u.user_id), h("td", {}, when(u.created_at)), h("td", {}, u.revoked_at ? "revoked" : "active"),
        h("td", {}, h("button", { type: "button", onclick: () => rotate("/users/" + encodeURIComponent(u.user_id) + "/rotate-key", "user " + u.user_id) }, "Rotate key"),
          u.revoked_at ? null : h("button", { type: "button", class: "danger", onclick: () => revoke("/users/" + encodeURIComponent(u.user_id), "user " + u.user_id, showUsers) }, "Revoke"))))))));
  });
  // An agent's trust level changes in place (PATCH, audited as
  // agent.trust); its next request is gated at the new level.
  function trustPicker(a) {
    const sel = h("select", { class: "trust", "aria-label": "Trust of agent " + a.name }, TRUST.map((t) => h("option", { value: t }, t)));
    sel.value = a.trust || "standard";
    sel.addEventListener("change", async () => {
      try {
        const r = await patch("/v1/agents/" + encodeURIComponent(a.id), { trust: sel.value });
        a.trust = r.agent.trust;
        toast("Agent " + a.name + " is now " + a.trust);
      } catch (e) { sel.value = a.trust || "standard"; toast(e.message); }
    });
    return sel;
  }
  async function rotate(path, what) {
    if (!await confirmDialog("Rotate the credential of " + what + "?", "The old one stops working at once.", "Rotate")) return;
    try { const r = await post(path); clear(secret, shownOnce("New credential of " + what, r.token || r.user_key)); showAgents(); showUsers(); } catch (e) { toast(e.message); }
  }
  async function revoke(path, what, again) {
    if (!await confirmDialog("Revoke " + what + "?", "Its credential stops working at once.", "Revoke")) return;
    try { await del(path); toast("Revoked " + what); again(); } catch (e) { toast(e.message); }
  }
  clear(main, h("h1", {}, "Agents, users and tokens"), secret, h("h2", {}, "Agents"), aform, agents, h("h2", {}, "Gateway users"), uform, users);
  showAgents(); showUsers();
  return () => clear(secret); // a shown secret leaves with the screen
}
