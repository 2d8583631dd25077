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

  function showCase(id) {
    api("case?id=" + encodeURIComponent(id)).then(function (c) {
      text(document.getElementById("case-title"), "Case " + id);
      text(document.getElementById("case-body"), JSON.stringify(c, null, 2));
      document.getElementById("queue").hidden = true;
      document.getElementById("case").hidden = false;
    }).catch(problem);
  }

  document.addEventListener("DOMContentLoaded", function () {
    api("whoami").then(function (me) {
      text(document.getElementById("who"),
           me.person + (me.act ? "" : " (may look, not act)"));
    }).catch(problem);

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
