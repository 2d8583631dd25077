// mt5-credit console.  Plain JavaScript, no build step, nothing from
// elsewhere (the Content-Security-Policy allows only this origin).  Every
// value from the database, a webhook body or a settlement file is put
// into the page as text (textContent), never as markup.

"use strict";

(function () {
  function api(path) {
    return fetch("api/" + path, {
      credentials: "same-origin",
      headers: { "Accept": "application/json" }
    }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) {
          throw new Error((body && body.error) || ("HTTP " + r.status));
        }
        return body;
      });
    });
  }

  function text(el, value) {
    el.textContent = value === null || value === undefined ? "-" : String(value);
    return el;
  }

  function problem(err) {
    var p = document.getElementById("problem");
    text(p, "The console could not do that: " + err.message);
    p.hidden = false;
  }

  function cell(tr, value, cls) {
    var td = text(document.createElement("td"), value);
    if (cls) {
      td.className = cls;
    }
    tr.appendChild(td);
  }

  function showCases() {
    var form = document.getElementById("filter");
    var q = [];
    ["status", "kind"].forEach(function (k) {
      var v = form.elements[k].value;
      if (v) {
        q.push(k + "=" + encodeURIComponent(v));
      }
    });

    api("cases" + (q.length ? "?" + q.join("&") : "")).then(function (rows) {
      var body = document.querySelector("#cases tbody");
      body.replaceChildren();
      rows.forEach(function (c) {
        var tr = document.createElement("tr");
        tr.className = "case";
        tr.dataset.id = c.id;
        cell(tr, c.id, "num");
        cell(tr, c.priority);
        cell(tr, c.severity, "sev-" + c.severity);
        cell(tr, c.kind);
        cell(tr, c.status);
        cell(tr, c.assigned_to);
        cell(tr, c.amount_minor === null ? null
                 : c.amount_minor + " " + (c.currency || ""), "num");
        cell(tr, c.opened_at);
        cell(tr, c.summary);
        tr.addEventListener("click", function () { showCase(c.id); });
        body.appendChild(tr);
      });
    }).catch(problem);
  }

  var me = null;       // who the console acts for (api/whoami)
  var current = null;  // the case shown

  // An action: a fresh token first (a restarted nginx made a new key),
  // then the JSON object, as the database's console_act() reads it.
  function act(action) {
    return api("whoami").then(function (who) {
      return fetch("api/act", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json",
                   "X-CSRF-Token": who.csrf },
        body: JSON.stringify(action)
      });
    }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) {
          throw new Error(body.detail || body.error || ("HTTP " + r.status));
        }
        return body;
      });
    });
  }

  function fact(dl, name, value) {
    dl.appendChild(text(document.createElement("dt"), name));
    dl.appendChild(text(document.createElement("dd"), value));
  }

  function list(ol, items, line) {
    ol.replaceChildren();
    items.forEach(function (it) {
      ol.appendChild(text(document.createElement("li"), line(it)));
    });
  }

  function button(label, onclick) {
    var b = text(document.createElement("button"), label);
    b.type = "button";
    b.addEventListener("click", onclick);
    return b;
  }

  function note() {
    return document.getElementById("note").value;
  }

  function after(promise) {
    promise.then(function () {
      document.getElementById("note").value = "";
      showCase(current);
    }).catch(problem);
  }

  function showProposals(proposals) {
    var body = document.querySelector("#proposals tbody");
    body.replaceChildren();
    proposals.forEach(function (p) {
      var tr = document.createElement("tr");
      cell(tr, p.id, "num");
      cell(tr, p.action);
      cell(tr, p.proposed_by);
      cell(tr, p.note);
      cell(tr, p.status + (p.decided_by ? " by " + p.decided_by : ""));
      var td = document.createElement("td");
      if (p.status === "proposed" && me && me.act) {
        if (p.proposed_by === me.person) {
          // the two-person rule: the database refuses it too
          text(td, "waiting for a second person");
          td.className = "waiting";
        } else {
          td.appendChild(button("Approve", function () {
            after(act({ action: "approve", proposal: p.id, note: note() }));
          }));
          td.appendChild(button("Reject", function () {
            after(act({ action: "reject", proposal: p.id, note: note() }));
          }));
        }
      }
      tr.appendChild(td);
      body.appendChild(tr);
    });
  }

  function showEvents(events) {
    var div = document.getElementById("events");
    div.replaceChildren();
    events.forEach(function (e) {
      div.appendChild(text(document.createElement("h4"),
        e.provider + " " + e.type + " (" + e.event_id + "), " +
        e.disposition + ", " + e.received_at));
      div.appendChild(text(document.createElement("pre"), e.body));
    });
  }

  function showCase(id) {
    current = id;
    api("case?id=" + encodeURIComponent(id)).then(function (c) {
      var k = c["case"] || {};
      var cr = c.credit || {};
      var dl = document.getElementById("case-facts");
      text(document.getElementById("case-title"),
           "Case " + id + ": " + k.kind);
      dl.replaceChildren();
      fact(dl, "Status", k.status);
      fact(dl, "Severity", k.severity);
      fact(dl, "Owner", k.assigned_to);
      fact(dl, "Credit", cr.id === undefined ? null
           : cr.id + " " + cr.reference + " " + cr.status + ", " +
             cr.amount_minor + " " + cr.currency + " (minor units), login " +
             cr.mt5_login + " on " + cr.mt5_server);
      fact(dl, "Details", JSON.stringify(k.details));

      list(document.getElementById("history"), c.credit_history || [],
           function (h) {
             return h.at + ": " + (h.from_status || "-") + " to " +
                    h.to_status + " by " + h.actor;
           });
      list(document.getElementById("desk"), c.actions || [],
           function (a) {
             return a.at + ": " + a.action + " by " + a.actor +
                    (a.note ? ": " + a.note : "");
           });
      showProposals(c.proposals || []);
      showEvents(c.events || []);
      text(document.getElementById("case-body"), JSON.stringify(c, null, 2));

      document.getElementById("actions").hidden =
        !(me && me.act) || k.status === "resolved";
      document.getElementById("propose-requeue").hidden =
        !(cr.status === "failed");
      document.getElementById("queue").hidden = true;
      document.getElementById("case").hidden = false;
    }).catch(problem);
  }

  document.addEventListener("DOMContentLoaded", function () {
    api("whoami").then(function (who) {
      me = who;
      text(document.getElementById("who"),
           me.person + (me.act ? "" : " (may look, not act)"));
    }).catch(problem);

    document.getElementById("assign-me").addEventListener("click", function () {
      after(act({ action: "assign", "case": current, to: me.person,
                  note: note() }));
    });
    document.getElementById("add-note").addEventListener("click", function () {
      after(act({ action: "note", "case": current, note: note() }));
    });
    document.getElementById("propose-requeue").addEventListener("click",
      function () {
        after(act({ action: "propose", "case": current,
                    proposal_action: "requeue_credit", note: note() }));
      });
    document.getElementById("resolve").addEventListener("click", function () {
      after(act({ action: "resolve", "case": current,
                  resolution: document.getElementById("resolution").value,
                  note: note() }));
    });

    document.getElementById("filter").addEventListener("submit", function (e) {
      e.preventDefault();
      showCases();
    });

    document.getElementById("back").addEventListener("click", function (e) {
      e.preventDefault();
      document.getElementById("case").hidden = true;
      document.getElementById("queue").hidden = false;
    });

    showCases();
  });
}());
