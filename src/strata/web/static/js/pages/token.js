// The bearer token: asked for when the API says it needs one, kept for this tab only.
import { setToken, token } from "../api.js";
import { h } from "../dom.js";

export function tokenForm(_parts, _params, rerender, reason) {
  const input = h("input", {
    type: "password", id: "token", name: "token", autocomplete: "off", required: true,
    "aria-describedby": "token-help",
  });
  const form = h(
    "form",
    { class: "token-form" },
    h("label", { for: "token" }, "Bearer token"),
    input,
    h("p", { id: "token-help", class: "hint" },
      "Kept in this tab only (session storage) and sent as 'Authorization: Bearer …'. ",
      "A read token shows everything; building needs a write token."),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Use this token"),
      token() ? h("button", { type: "button", class: "quiet", onclick: () => { setToken(""); back(rerender); } }, "Forget the token") : null),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    setToken(input.value.trim());
    back(rerender);
  });
  setTimeout(() => input.focus(), 0);
  return h("div", null,
    h("h1", null, "This server needs a token"),
    reason ? h("p", { class: "error", role: "alert" }, reason) : h("p", null, "Enter a read or write token."),
    form);
}

function back(rerender) {
  if (location.hash === "#/token") history.back();
  else rerender();
}
