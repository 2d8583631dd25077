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
    ["status", "kind", "severity", "owner", "age"].forEach(function (k) {
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
  var currentCredit = null;

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

  // the person's one-time code (sql/065): a decision that moves money
  // carries it; the database checks it against this very action, once
  function code(id) {
    return document.getElementById(id || "code").value.trim();
  }

  // the evidence box, one item a line, as the list the desk keeps
  function evidence() {
    return document.getElementById("evidence").value.split("\n")
      .map(function (l) { return l.trim(); })
      .filter(function (l) { return l.length > 0; });
  }

  function after(promise) {
    // a code is spent, or refused, either way: the next needs a new one
    document.getElementById("code").value = "";
    promise.then(function () {
      document.getElementById("note").value = "";
      document.getElementById("evidence").value = "";
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
            after(act({ action: "approve", proposal: p.id, note: note(),
                        code: code() }));
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
      currentCredit = cr.id === undefined ? null : cr.id;
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
      clear("case-recon");
      (c.recon_items || []).forEach(function (i) {
        row("case-recon", [i.kind + " (" + i.severity + ")",
          json(i.settlement), json(i.credit), json(i.deals)]);
      });
      text(document.getElementById("case-body"), JSON.stringify(c, null, 2));

      document.getElementById("actions").hidden =
        !(me && me.act) || k.status === "resolved";
      document.getElementById("propose-requeue").hidden =
        !(cr.status === "failed");
      // a correction is of a credit that is done; a settlement of one
      // whose outcome is unknown
      document.getElementById("correction").hidden = cr.status !== "done";
      document.getElementById("settle").hidden = cr.status !== "unknown";
      // 079, 080: a risk hold is released or returned, by two people; a
      // withdrawal's case names no credit (the database refuses it once
      // no longer held)
      document.getElementById("hold").hidden =
        cr.status !== "held" &&
        !(k.kind === "withdrawal_hold" && k.status !== "pending_resolution");
      show("case");
    }).catch(problem);
  }

  // --- views ---------------------------------------------------------------

  function show(view) {
    document.querySelectorAll(".view").forEach(function (v) {
      v.hidden = v.id !== view;
    });
    document.querySelectorAll("nav a").forEach(function (a) {
      a.className = "tab" + (a.dataset.view === view ? " current" : "");
    });
  }

  function row(table, values) {
    var tr = document.createElement("tr");
    values.forEach(function (v) { cell(tr, v); });
    document.querySelector("#" + table + " tbody").appendChild(tr);
    return tr;
  }

  function clear(table) {
    document.querySelector("#" + table + " tbody").replaceChildren();
  }

  // --- withdrawals: a maker prepares, a checker approves what was signed ---

  var wdCurrent = null;

  function showWithdrawals() {
    show("withdrawals");
    api("withdrawals").then(function (rows) {
      clear("wd-list");
      rows.forEach(function (w) {
        var tr = row("wd-list", [w.reference, w.status, w.client_id,
          w.mt5_login, w.amount_minor + " " + w.currency, w.legs,
          w.prepared_by, w.created_at]);
        tr.className = "case";
        tr.addEventListener("click", function () {
          showWithdrawal(w.reference);
        });
      });
    }).catch(problem);
  }

  function showWithdrawal(ref) {
    wdCurrent = ref;
    api("withdrawal?ref=" + encodeURIComponent(ref)).then(function (w) {
      var dl = document.getElementById("wd-facts");
      text(document.getElementById("wd-title"), "Withdrawal " + ref);
      dl.replaceChildren();
      fact(dl, "Status", w.status);
      fact(dl, "Client", w.client_id);
      fact(dl, "Account", w.mt5_login + " on " + w.mt5_server);
      fact(dl, "Amount", w.amount_minor + " " + w.currency + " (minor units)");
      fact(dl, "Destination", JSON.stringify(w.destination));
      fact(dl, "Prepared by", w.prepared_by);
      fact(dl, "Approved by", w.approved_by);
      clear("wd-plan");
      (w.plan || []).forEach(function (l) {
        row("wd-plan", [l.leg, l.kind, l.provider, l.payment,
          l.amount_minor + " " + l.currency, l.account_amount_minor,
          l.fx_rate]);
      });
      text(document.getElementById("wd-digest"), w.prepared_digest);

      var mine = w.prepared_by === (me && me.person);
      document.getElementById("wd-actions").hidden =
        !(me && me.act) || (w.status !== "requested" && w.status !== "prepared");
      document.getElementById("wd-prepare").hidden = w.status !== "requested";
      // the two-person rule: the database refuses it too
      document.getElementById("wd-approve").hidden =
        w.status !== "prepared" || mine;
      document.getElementById("wd-waiting").hidden =
        !(w.status === "prepared" && mine);
      show("withdrawal");
    }).catch(problem);
  }

  function wdAfter(promise) {
    document.getElementById("wd-code").value = "";
    promise.then(function () {
      document.getElementById("wd-note").value = "";
      showWithdrawal(wdCurrent);
    }).catch(problem);
  }

  // --- events: the bytes as received, and their replays --------------------------

  var eventCurrent = null;

  function showEventList() {
    var f = document.getElementById("events-form").elements;
    var q = [];
    ["provider", "disposition", "deposit", "request_id"].forEach(function (k) {
      if (f[k].value) {
        q.push(k + "=" + encodeURIComponent(f[k].value));
      }
    });
    show("events-view");
    api("events" + (q.length ? "?" + q.join("&") : "")).then(function (rows) {
      clear("event-list");
      rows.forEach(function (e) {
        var tr = row("event-list", [e.id, e.provider, e.provider_event_id,
          e.event_type, e.received_at, e.disposition, e.credit_id, e.replays,
          e.detail]);
        tr.className = "case";
        tr.addEventListener("click", function () { showEvent(e.id); });
      });
    }).catch(problem);
  }

  function showEvent(id) {
    eventCurrent = id;
    api("event?id=" + encodeURIComponent(id)).then(function (e) {
      var dl = document.getElementById("event-facts");
      text(document.getElementById("event-title"), "Event " + id + ": " +
           e.provider + " " + e.event_type);
      dl.replaceChildren();
      fact(dl, "Provider's id", e.provider_event_id);
      fact(dl, "Signature", e.signature_scheme + ", signed at " + e.signed_at);
      fact(dl, "Received", e.received_at + " (request " + e.request_id + ")");
      fact(dl, "SHA-256", e.body_sha256);
      fact(dl, "Disposition", e.disposition + (e.detail ? ": " + e.detail : ""));
      fact(dl, "Credit", e.credit_id);
      text(document.getElementById("event-body"), e.raw_body);
      list(document.getElementById("event-replays"), e.replays || [],
           function (r) {
             return r.replayed_at + " by " + r.replayed_by + ": " + r.outcome +
                    " (" + r.reason + ")";
           });
      document.getElementById("event-actions").hidden = !(me && me.act);
      show("event");
    }).catch(problem);
  }

  // --- outbound events: what the broker's systems were sent -----------------------

  var outboundCurrent = null;

  function showOutbound() {
    var f = document.getElementById("outbound-form").elements;
    var q = [];
    ["status", "subject"].forEach(function (k) {
      if (f[k].value) {
        q.push(k + "=" + encodeURIComponent(f[k].value));
      }
    });
    show("outbound-view");
    api("outbound" + (q.length ? "?" + q.join("&") : "")).then(function (rows) {
      clear("outbound-list");
      rows.forEach(function (o) {
        var tr = row("outbound-list", [o.webhook_id, o.type, o.subject, o.seq,
          o.created_at, o.endpoint, o.status, o.attempts,
          (o.last_http_status || "") + " " + (o.last_error || "")]);
        tr.className = "case";
        tr.addEventListener("click", function () {
          showOutboundMessage(o.webhook_id);
        });
      });
      document.getElementById("outbound-actions").hidden = !(me && me.act);
    }).catch(problem);
  }

  function showOutboundMessage(id) {
    outboundCurrent = id;
    api("outbound_message?id=" + encodeURIComponent(id)).then(function (x) {
      var m = x.message || {};
      text(document.getElementById("outbound-title"), m.type + " " +
           m.subject + " #" + m.sequence + " (" + id + ")");
      text(document.getElementById("outbound-body"), m.body);
      list(document.getElementById("outbound-deliveries"), m.deliveries || [],
           function (d) {
             return d.endpoint + ": " + d.status + ", " + d.attempts +
                    " tries" + (d.last_error ? ", " + d.last_error : "");
           });
      list(document.getElementById("outbound-attempts"), m.attempts || [],
           function (a) {
             return a.at + " " + a.endpoint + " try " + a.attempt + ": " +
                    a.outcome + (a.http_status ? " (HTTP " + a.http_status +
                    ")" : "") + (a.error ? " " + a.error : "");
           });
      list(document.getElementById("outbound-replays"), m.replays || [],
           function (r) {
             return r.replayed_at + " by " + r.replayed_by + ": " +
                    r.deliveries + " (" + r.reason + ")";
           });
      document.getElementById("outbound-message-actions").hidden =
        !(me && me.act);
      show("outbound-message");
    }).catch(problem);
  }

  function outboundEndpoint() {
    return document.getElementById("outbound-endpoint").value || null;
  }

  // --- reconciliation ------------------------------------------------------------

  function showRuns() {
    show("recon");
    api("recon_runs").then(function (runs) {
      clear("runs");
      runs.forEach(function (r) {
        var c = r.counts || {};
        var tr = row("runs", [r.id, r.business_day, r.provider, r.currency,
          r.verdict + (r.reason ? ": " + r.reason : ""), c.matched,
          c.mismatched, r.finished_at]);
        tr.className = "case";
        tr.addEventListener("click", function () { showRun(r.id); });
      });
    }).catch(problem);
  }

  function json(v) {
    return v === null || v === undefined ? null : JSON.stringify(v);
  }

  function showRun(id) {
    api("recon_run?id=" + encodeURIComponent(id)).then(function (run) {
      var dl = document.getElementById("run-facts");
      text(document.getElementById("run-title"), "Run " + id + ": " +
           run.provider + " " + run.business_day + " " + run.currency);
      dl.replaceChildren();
      document.getElementById("run-report").href =
        "api/recon_report?id=" + encodeURIComponent(id);
      fact(dl, "Verdict", run.verdict + (run.reason ? ": " + run.reason : ""));
      fact(dl, "Started", run.started_at + " by " + run.started_by);
      fact(dl, "Finished", run.finished_at);
      (run.counts || []).forEach(function (c) {
        fact(dl, c.dimension + " " + c.name, c.n);
      });
      clear("run-items");
      (run.items || []).forEach(function (i) {
        var tr = row("run-items", [i.kind, i.severity, i.movement,
          i.amount_minor === null ? null : i.amount_minor + " " + i.currency,
          json(i.settlement), json(i.credit), json(i.deals)]);
        var td = document.createElement("td");
        td.appendChild(button("Case " + i.case_id, function () {
          showCase(i.case_id);
        }));
        tr.appendChild(td);
      });
      clear("run-transit");
      (run.in_transit_settlement || []).forEach(function (t) {
        row("run-transit", ["settlement", t.since_day, t.age_days,
          t.category + " " + t.provider_key,
          t.amount_minor === undefined ? null
            : t.amount_minor + " " + t.currency]);
      });
      (run.in_transit_credit || []).forEach(function (t) {
        row("run-transit", ["credit", t.since_day, t.age_days,
          t.movement + " " + t.reference + " " + t.status,
          t.amount_minor + " " + t.currency]);
      });
      show("recon-run");
    }).catch(problem);
  }

  // --- search ------------------------------------------------------------------

  function search(q) {
    api("search?q=" + encodeURIComponent(q)).then(function (r) {
      clear("found-deposits");
      clear("found-credits");
      clear("found-withdrawals");
      r.deposits.forEach(function (d) {
        row("found-deposits", [d.reference, d.status, d.client_id,
          d.mt5_login + " on " + d.mt5_server,
          d.amount_minor + " " + d.currency, d.provider, d.created_at]);
      });
      r.credits.forEach(function (c) {
        row("found-credits", [c.reference, c.kind, c.status,
          c.mt5_login + " on " + c.mt5_server,
          c.amount_minor + " " + c.currency, c.provider_payment_id,
          c.mt5_deal_ticket, c.created_at]);
      });
      r.withdrawals.forEach(function (w) {
        var tr = row("found-withdrawals", [w.reference, w.status,
          w.client_id, w.mt5_login, w.amount_minor + " " + w.currency,
          w.created_at]);
        tr.className = "case";
        tr.addEventListener("click", function () {
          showWithdrawal(w.reference);
        });
      });
    }).catch(problem);
  }

  // --- status and the kill switch ----------------------------------------------

  function showStatus() {
    show("status-view");
    api("status").then(function (st) {
      clear("work");
      st.work.forEach(function (w) {
        row("work", [w.metric, w.kind, w.status, w.value]);
      });
      clear("pauses");
      st.pauses.forEach(function (p) {
        var tr = row("pauses", [p.scope, p.target, p.paused_by, p.paused_at,
          p.reason, p.held]);
        var td = document.createElement("td");
        if (me && me.act) {
          td.appendChild(button("Resume", function () {
            act({ action: "resume", scope: p.scope, target: p.target,
                  note: "resumed from the console" })
              .then(showStatus).catch(problem);
          }));
        }
        tr.appendChild(td);
      });
      clear("backfills");
      (st.backfills || []).forEach(function (b) {
        row("backfills", [b.id, b.provider, b.since, b.requested_by,
          b.reason, b.finished_at, b.outcome]);
      });
      document.getElementById("backfill-form").hidden = !(me && me.act);
      clear("reconciled");
      st.reconciled.forEach(function (f) {
        row("reconciled", [f.provider, f.currency, f.last_day,
          f.last_run_verdict, f.last_run_seconds]);
      });
      document.getElementById("pause-form").hidden = !(me && me.act);
    }).catch(problem);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("nav a").forEach(function (a) {
      a.addEventListener("click", function (e) {
        e.preventDefault();
        var v = a.dataset.view;
        if (v === "withdrawals") {
          showWithdrawals();
        } else if (v === "events-view") {
          showEventList();
        } else if (v === "outbound-view") {
          showOutbound();
        } else if (v === "recon") {
          showRuns();
        } else if (v === "status-view") {
          showStatus();
        } else if (v === "queue") {
          show("queue");
          showCases();
        } else {
          show(v);
        }
      });
    });

    document.getElementById("events-form").addEventListener("submit",
      function (e) {
        e.preventDefault();
        showEventList();
      });

    document.getElementById("replay").addEventListener("click", function () {
      act({ action: "event_replay", event: eventCurrent,
            reason: document.getElementById("replay-reason").value })
        .then(function () { showEvent(eventCurrent); }).catch(problem);
    });

    document.getElementById("outbound-form").addEventListener("submit",
      function (e) {
        e.preventDefault();
        showOutbound();
      });

    document.getElementById("outbound-replay").addEventListener("click",
      function () {
        act({ action: "outbound_replay", webhook_id: outboundCurrent,
              reason: document.getElementById("outbound-message-reason").value })
          .then(function () { showOutboundMessage(outboundCurrent); })
          .catch(problem);
      });

    document.getElementById("outbound-replay-since").addEventListener("click",
      function () {
        act({ action: "outbound_replay_since",
              since: document.getElementById("outbound-since").value,
              endpoint: outboundEndpoint(),
              reason: document.getElementById("outbound-reason").value })
          .then(function () { showOutbound(); }).catch(problem);
      });

    document.getElementById("outbound-enable").addEventListener("click",
      function () {
        act({ action: "outbound_enable", endpoint: outboundEndpoint(),
              reason: document.getElementById("outbound-reason").value })
          .then(function () { showOutbound(); }).catch(problem);
      });

    document.getElementById("search-form").addEventListener("submit",
      function (e) {
        e.preventDefault();
        search(e.target.elements.q.value);
      });

    document.getElementById("backfill-form").addEventListener("submit",
      function (e) {
        var f = e.target.elements;
        e.preventDefault();
        act({ action: "backfill", provider: f.provider.value,
              since: f.since.value, reason: f.reason.value })
          .then(showStatus).catch(problem);
      });

    document.getElementById("pause-form").addEventListener("submit",
      function (e) {
        var f = e.target.elements;
        e.preventDefault();
        act({ action: "pause", scope: f.scope.value, target: f.target.value,
              reason: f.reason.value }).then(showStatus).catch(problem);
      });

    document.getElementById("wd-prepare").addEventListener("click", function () {
      wdAfter(act({ action: "withdrawal_prepare", withdrawal: wdCurrent,
                    note: document.getElementById("wd-note").value,
                    code: code("wd-code") }));
    });
    document.getElementById("wd-approve").addEventListener("click", function () {
      // exactly the digest this page shows: what the approver saw
      wdAfter(act({ action: "withdrawal_approve", withdrawal: wdCurrent,
                    digest: document.getElementById("wd-digest").textContent,
                    note: document.getElementById("wd-note").value,
                    code: code("wd-code") }));
    });
    document.getElementById("wd-reject").addEventListener("click", function () {
      wdAfter(act({ action: "withdrawal_reject", withdrawal: wdCurrent,
                    note: document.getElementById("wd-note").value }));
    });

    api("whoami").then(function (who) {
      me = who;
      text(document.getElementById("who"),
           me.person + (me.act ? "" : " (may look, not act)"));
      document.getElementById("no-second-factor").hidden =
        !me.act || me.second_factor;
    }).catch(problem);

    document.getElementById("assign-me").addEventListener("click", function () {
      after(act({ action: "assign", "case": current, to: me.person,
                  note: note() }));
    });
    document.getElementById("add-note").addEventListener("click", function () {
      after(act({ action: "note", "case": current, note: note(),
                  evidence: evidence() }));
    });
    document.getElementById("propose-requeue").addEventListener("click",
      function () {
        after(act({ action: "propose", "case": current,
                    proposal_action: "requeue_credit", note: note(),
                    evidence: evidence(), code: code() }));
      });
    [["release", "release_hold"], ["return", "return_hold"]].forEach(
      function (h) {
        document.getElementById("propose-" + h[0]).addEventListener("click",
          function () {
            after(act({ action: "propose", "case": current,
                        proposal_action: h[1], note: note(),
                        evidence: evidence(), code: code() }));
          });
      });
    // amounts stay text: the database converts them exactly (sql/023)
    ["credit", "debit"].forEach(function (d) {
      document.getElementById("propose-" + d).addEventListener("click",
        function () {
          after(act({ action: "propose", "case": current,
                      proposal_action: "correcting_" + d,
                      amount: document.getElementById("amount").value,
                      note: note(), evidence: evidence(), code: code() }));
        });
    });
    document.getElementById("propose-settle").addEventListener("click",
      function () {
        after(act({ action: "propose_settle_done", "case": current,
                    credit: currentCredit,
                    ticket: document.getElementById("ticket").value,
                    note: note(), evidence: evidence(), code: code() }));
      });
    document.getElementById("propose-settle-failed").addEventListener("click",
      function () {
        after(act({ action: "propose", "case": current,
                    proposal_action: "settle_failed", note: note(),
                    evidence: evidence(), code: code() }));
      });
    document.getElementById("resolve").addEventListener("click", function () {
      after(act({ action: "resolve", "case": current,
                  resolution: document.getElementById("resolution").value,
                  note: note(), evidence: evidence() }));
    });

    document.getElementById("filter").addEventListener("submit", function (e) {
      e.preventDefault();
      showCases();
    });

    document.getElementById("back").addEventListener("click", function (e) {
      e.preventDefault();
      show("queue");
    });

    showCases();
  });
}());
