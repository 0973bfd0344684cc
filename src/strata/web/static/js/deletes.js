// Deleting a dataset or a job from its page, as Marquez's UI does: a write token, then a
// dialog that says what deleting means before anything is sent.
import { api, enc, offer } from "./api.js";
import { errorBox, h } from "./dom.js";

const WORDS = {
  dataset: "It is hidden from lists, search and lineage until an event names it again; its versions and runs stay in the store.",
  job: "It is hidden from lists, search and lineage until an event for it arrives; its runs stay in the store.",
};

export async function deleteButton(kind, ns, name) {
  const { access } = await offer();
  const allowed = access === "write";
  const dialog = h("dialog", { class: "confirm", "aria-labelledby": "confirm-title" });
  const open = () => {
    const problem = h("div", { "aria-live": "polite" });
    const confirm = h("button", { type: "button", class: "danger", id: "confirm-delete" }, `Delete ${kind}`);
    confirm.addEventListener("click", async () => {
      confirm.disabled = true;
      try {
        await api(`/namespaces/${enc(ns)}/${kind === "dataset" ? "datasets" : "jobs"}/${enc(name)}`, { method: "DELETE" });
      } catch (e) {
        confirm.disabled = false;
        problem.replaceChildren(errorBox(`The ${kind} was not deleted: ${e.message}`));
        return;
      }
      dialog.close();
      location.hash = `#/?ns=${enc(ns)}&deleted=${enc(name)}`;
    });
    dialog.replaceChildren(
      h("h2", { id: "confirm-title" }, `Delete ${kind} ${name}?`),
      h("p", null, WORDS[kind]),
      problem,
      h("p", { class: "actions" }, confirm, h("button", { type: "button", class: "quiet", onclick: () => dialog.close() }, "Keep it")));
    dialog.showModal();
  };
  return h("span", { class: "delete" },
    h("button", {
      type: "button", class: "quiet delete-button", disabled: !allowed,
      title: allowed ? null : "Deleting needs a write token", onclick: open,
      "aria-label": `Delete ${kind} ${name}`,
    }, "Delete…"),
    dialog);
}
