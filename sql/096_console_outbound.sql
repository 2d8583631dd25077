--
-- 096: outbound events in the console (issue 34).
--
-- A person sees the outbound events (095) and their deliveries beside
-- the stored webhooks, and can send one again, every one since a time,
-- or enable an endpoint the sender disabled: the same functions as
-- `mt5credit outbox`, as the person the console let in, recorded with
-- who and why (outbound_replay).  A reader reads; only an operator acts.
--
--   api/outbound?status=&subject=        outbound_list()
--   api/outbound_message?id=msg_...      outbound_show(), the backlog
--   act outbound_replay {webhook_id, endpoint?, reason}
--   act outbound_replay_since {since, endpoint?, reason}
--   act outbound_enable {endpoint, reason}
--
-- console_call() and console_act() are re-declared; this file holds
-- their current definitions.
--

SET ROLE mt5credit_owner;

CREATE OR REPLACE FUNCTION mt5credit.console_call(p_identity text, p_endpoint text, p1 text, p2 text, p3 text, p4 text, p5 text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_person  text := console_person_of(p_identity);
    v_me      jsonb;
    v_out     text;
BEGIN
    IF p_endpoint = 'act' THEN
        PERFORM console_act_admit(v_person);
    END IF;

    -- PostgreSQL checks that the console's login may become v_person
    PERFORM set_config('role', v_person, true);

    -- as the person, before anything else: a person who may look or act
    v_me := console_whoami();

    CASE p_endpoint

    -- who, what they may, and the token their actions carry (the edge's)
    WHEN 'whoami' THEN
        v_out := (v_me || jsonb_build_object('csrf', p1))::text;

    -- the queue: kind, status, age (minutes), severity, owner
    WHEN 'cases' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.priority,
                                  c.opened_at), '[]')::text
        INTO v_out
        FROM case_list(p1, p2, p3::integer * interval '1 minute', 500) c
        WHERE c.severity = coalesce(p4, c.severity)
          AND c.assigned_to IS NOT DISTINCT FROM coalesce(p5, c.assigned_to);

    WHEN 'case' THEN
        v_out := case_show(p1::bigint)::text;

    -- the stored events, as mt5credit events list searches them:
    -- provider, type, disposition, deposit, request id
    WHEN 'events' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(e)), '[]')::text INTO v_out
        FROM events_list(p1, p2, p3, NULL, p4, NULL, NULL, p5, 500) e;

    WHEN 'event' THEN
        v_out := event_show(p1::bigint)::text;

    WHEN 'withdrawals' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(q)), '[]')::text INTO v_out
        FROM withdrawal_queue(p1, 500) q;

    WHEN 'withdrawal' THEN
        v_out := withdrawal_show(p1)::text;

    -- references, clients, logins, payment ids
    WHEN 'search' THEN
        v_out := console_search(p1)::text;

    -- reconciliation: the runs, newest day first; one run's findings
    WHEN 'recon_runs' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.business_day DESC,
                                  x.id DESC), '[]')::text
        INTO v_out
        FROM (SELECT r.id, r.provider, r.business_day, r.currency,
                     r.verdict, r.reason, r.started_by, r.started_at,
                     r.finished_at,
                     (SELECT jsonb_object_agg(c.name, c.n)
                      FROM recon_count c
                      WHERE c.run_id = r.id AND c.dimension = 'summary')
                         AS counts
              FROM recon_run r
              WHERE r.provider = coalesce(p1, r.provider)
              ORDER BY r.business_day DESC, r.id DESC LIMIT 500) x;

    WHEN 'recon_run' THEN
        SELECT (to_jsonb(r) || jsonb_build_object(
                'counts', (SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]')
                           FROM recon_count c WHERE c.run_id = r.id),
                'items', (SELECT coalesce(jsonb_agg(to_jsonb(i)
                                                    ORDER BY i.id), '[]')
                          FROM recon_item i WHERE i.run_id = r.id),
                'in_transit_settlement',
                    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')
                     FROM recon_transit_settlement t WHERE t.run_id = r.id),
                'in_transit_credit',
                    (SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]')
                     FROM recon_transit_credit t WHERE t.run_id = r.id)))::text
        INTO v_out
        FROM recon_run r WHERE r.id = p1::bigint;

    -- a run's HTML report, as the job wrote it (058), to download
    WHEN 'recon_report' THEN
        SELECT html INTO v_out FROM recon_report WHERE run_id = p1::bigint;

    WHEN 'status' THEN
        v_out := jsonb_build_object(
            'work', (SELECT coalesce(jsonb_agg(to_jsonb(w)), '[]')
                     FROM work_status() w),
            'pauses', (SELECT coalesce(jsonb_agg(to_jsonb(p)), '[]')
                       FROM pause_list(false) p),
            'reconciled', (SELECT coalesce(jsonb_agg(to_jsonb(f)), '[]')
                           FROM recon_freshness() f),
            'backfills', (SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]')
                          FROM backfill_requests_list() b))::text;

    -- outbound events (095), newest first, a row per endpoint: by status
    -- and subject; one with its body as sent and every try
    WHEN 'outbound' THEN
        SELECT coalesce(jsonb_agg(to_jsonb(o)), '[]')::text INTO v_out
        FROM outbound_list(NULL, p1, p2, 500) o;

    WHEN 'outbound_message' THEN
        v_out := jsonb_build_object(
            'message', outbound_show(p1),
            'endpoints', (SELECT coalesce(jsonb_agg(to_jsonb(b)), '[]')
                          FROM outbound_backlog() b))::text;

    -- one JSON object, read by console_act() (055 and after)
    WHEN 'act' THEN
        v_out := console_act(p1::jsonb)::text;

    ELSE
        RAISE EXCEPTION 'no endpoint "%"', p_endpoint
            USING ERRCODE = 'MC131';
    END CASE;

    RETURN v_out;
END
$$;



CREATE OR REPLACE FUNCTION mt5credit.console_act(p jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'mt5credit', 'pg_temp'
    AS $$
DECLARE
    v_action    text := p->>'action';
    v_evidence  jsonb := coalesce(p->'evidence', '[]');
    v_code      text := p->>'code';
    v_id        bigint;
    v_digest    text;
    v_outcome   text;
    v_refused   jsonb;
BEGIN
    IF jsonb_typeof(p) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'an action is a JSON object' USING ERRCODE = 'MC094';
    END IF;

    IF jsonb_typeof(v_evidence) <> 'array' THEN
        RAISE EXCEPTION 'evidence is a list' USING ERRCODE = 'MC094';
    END IF;

    CASE v_action
    WHEN 'assign' THEN
        PERFORM case_assign((p->>'case')::bigint, p->>'to', p->>'note');

    WHEN 'note' THEN
        PERFORM case_note((p->>'case')::bigint, p->>'note', v_evidence);

    WHEN 'propose' THEN
        v_refused := step_up_verify(v_code, v_action,
                                    (p->>'case')::bigint::text,
                                    p->>'proposal_action',
                                    (p->>'credit')::bigint::text,
                                    p->>'amount');
        IF v_refused IS NULL THEN
            v_id := case_propose((p->>'case')::bigint, p->>'proposal_action',
                                 (p->>'credit')::bigint, p->>'amount',
                                 p->>'note', v_evidence);
        END IF;

    WHEN 'propose_settle_done' THEN
        v_refused := step_up_verify(v_code, v_action,
                                    (p->>'case')::bigint::text,
                                    (p->>'credit')::bigint::text,
                                    (p->>'ticket')::bigint::text);
        IF v_refused IS NULL THEN
            v_id := case_propose_settle_done((p->>'case')::bigint,
                                             (p->>'credit')::bigint,
                                             (p->>'ticket')::bigint,
                                             p->>'note', v_evidence);
        END IF;

    WHEN 'approve' THEN
        v_refused := step_up_verify(v_code, v_action,
                                    (p->>'proposal')::bigint::text);
        IF v_refused IS NULL THEN
            v_id := case_decide((p->>'proposal')::bigint, v_action,
                                p->>'note');
        END IF;

    WHEN 'reject', 'withdraw' THEN
        v_id := case_decide((p->>'proposal')::bigint, v_action,
                            p->>'note');

    WHEN 'resolve' THEN
        PERFORM case_resolve((p->>'case')::bigint, p->>'resolution',
                             p->>'note', v_evidence);

    -- a withdrawal: one person prepares (the digest of what they saw),
    -- another approves with that digest (042)
    WHEN 'withdrawal_prepare' THEN
        v_refused := step_up_verify(v_code, v_action, p->>'withdrawal');
        IF v_refused IS NULL THEN
            v_digest := withdrawal_prepare(p->>'withdrawal', p->>'note');
        END IF;

    WHEN 'withdrawal_approve' THEN
        v_refused := step_up_verify(v_code, v_action, p->>'withdrawal',
                                    p->>'digest');
        IF v_refused IS NULL THEN
            PERFORM withdrawal_approve(p->>'withdrawal', p->>'digest',
                                       p->>'note');
        END IF;

    WHEN 'withdrawal_reject' THEN
        PERFORM withdrawal_reject(p->>'withdrawal', p->>'note');

    -- a stored event through ingest's rules again (039), recorded with
    -- who and why; its outcome is the answer
    WHEN 'event_replay' THEN
        SELECT r.replay_id, r.outcome INTO v_id, v_outcome
        FROM event_replay((p->>'event')::bigint, p->>'reason') r;

    -- a backfill from the provider's list, further back than its timer
    -- looks: asked for here, done by the next `mt5credit backfill` (059)
    WHEN 'backfill' THEN
        v_id := backfill_request_add(p->>'provider',
                                     (p->>'since')::timestamptz,
                                     p->>'reason');

    -- the kill switch (046)
    WHEN 'pause' THEN
        v_id := pause_set(p->>'scope', p->>'target', p->>'reason');

    WHEN 'resume' THEN
        v_id := pause_resume(p->>'scope', p->>'target', p->>'note');

    -- outbound events (095): one again, every one since a time; an
    -- endpoint the sender disabled, on again.  The count is the answer.
    WHEN 'outbound_replay' THEN
        v_id := outbound_replay(p->>'webhook_id', p->>'endpoint',
                                p->>'reason');

    WHEN 'outbound_replay_since' THEN
        v_id := outbound_replay_since((p->>'since')::timestamptz,
                                      p->>'endpoint', p->>'reason');

    WHEN 'outbound_enable' THEN
        v_outcome := CASE WHEN outbound_endpoint_enable(p->>'endpoint',
                                                        p->>'reason')
                          THEN 'enabled' ELSE 'not_disabled' END;

    ELSE
        RAISE EXCEPTION 'no action "%"', coalesce(v_action, '')
            USING ERRCODE = 'MC094';
    END CASE;

    IF v_refused IS NOT NULL THEN
        RETURN v_refused;
    END IF;

    RETURN jsonb_build_object('action', v_action,
                              'by', console_whoami()->>'person',
                              'id', v_id, 'digest', v_digest,
                              'outcome', v_outcome);
END
$$;

