--
-- 056: the console's withdrawals, kill switch and search.
--
-- console_act() (055's) is re-declared here, this file holds its current
-- definition: it also passes a withdrawal's prepare, approve and reject
-- (042: the maker's digest, the checker approving with it) and a pause or
-- resume (046) to their own functions, unchanged.
--
--   {"action": "withdrawal_prepare", "withdrawal": "wd_000001", "note": ""}
--     -> {"digest": "..."}: what the approver must approve with
--   {"action": "withdrawal_approve", "withdrawal": "wd_000001",
--    "digest": "...", "note": "..."}
--   {"action": "withdrawal_reject", "withdrawal": "wd_000001", "note": ""}
--   {"action": "pause", "scope": "server", "target": "live1",
--    "reason": "..."}
--   {"action": "resume", "scope": "server", "target": "live1", "note": ""}
--
-- console_search(): the deposits, credits and withdrawals a person asks
-- about, by the reference (dep_..., dep:N, wd_...), the client, the MT5
-- login or the provider's payment id: equal, never a pattern, at most 50
-- of each.  No index is added for it: the credits table is on the
-- ingest path, and a person's search may take a scan of it where the
-- references' and the clients' indexes do not serve.
--

-- 055's, and a withdrawal's and the kill switch's actions
CREATE OR REPLACE FUNCTION mt5credit.console_act(p jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_action    text := p->>'action';
    v_evidence  jsonb := coalesce(p->'evidence', '[]');
    v_id        bigint;
    v_digest    text;
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
        v_id := case_propose((p->>'case')::bigint, p->>'proposal_action',
                             (p->>'credit')::bigint, p->>'amount',
                             p->>'note', v_evidence);

    WHEN 'propose_settle_done' THEN
        v_id := case_propose_settle_done((p->>'case')::bigint,
                                         (p->>'credit')::bigint,
                                         (p->>'ticket')::bigint,
                                         p->>'note', v_evidence);

    WHEN 'approve', 'reject', 'withdraw' THEN
        v_id := case_decide((p->>'proposal')::bigint, v_action,
                            p->>'note');

    WHEN 'resolve' THEN
        PERFORM case_resolve((p->>'case')::bigint, p->>'resolution',
                             p->>'note', v_evidence);

    -- a withdrawal: one person prepares (the digest of what they saw),
    -- another approves with that digest (042)
    WHEN 'withdrawal_prepare' THEN
        v_digest := withdrawal_prepare(p->>'withdrawal', p->>'note');

    WHEN 'withdrawal_approve' THEN
        PERFORM withdrawal_approve(p->>'withdrawal', p->>'digest',
                                   p->>'note');

    WHEN 'withdrawal_reject' THEN
        PERFORM withdrawal_reject(p->>'withdrawal', p->>'note');

    -- the kill switch (046)
    WHEN 'pause' THEN
        v_id := pause_set(p->>'scope', p->>'target', p->>'reason');

    WHEN 'resume' THEN
        v_id := pause_resume(p->>'scope', p->>'target', p->>'note');

    ELSE
        RAISE EXCEPTION 'no action "%"', coalesce(v_action, '')
            USING ERRCODE = 'MC094';
    END CASE;

    RETURN jsonb_build_object('action', v_action,
                              'by', console_whoami()->>'person',
                              'id', v_id, 'digest', v_digest);
END
$$;


CREATE FUNCTION mt5credit.console_search(p_q text)
RETURNS jsonb
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
    WITH q AS (
        SELECT p_q AS s,
               CASE WHEN p_q ~ '^[0-9]{1,18}$' THEN p_q::bigint END AS n
    ),
    d AS (
        SELECT d.* FROM deposit d, q
        WHERE d.reference = q.s OR d.client_id = q.s OR d.mt5_login = q.n
           OR d.id IN (SELECT c.deposit_id FROM mt5_credit c
                       WHERE c.reference = q.s
                          OR c.provider_payment_id = q.s)
        ORDER BY d.id DESC LIMIT 50
    ),
    c AS (
        SELECT c.id, c.reference, c.kind, c.direction, c.status,
               c.amount_minor, c.currency, c.mt5_server, c.mt5_login,
               c.provider, c.provider_payment_id, c.mt5_deal_ticket,
               c.created_at
        FROM mt5_credit c, q
        WHERE c.reference = q.s OR c.provider_payment_id = q.s
           OR c.mt5_login = q.n
           OR c.deposit_id IN (SELECT id FROM d)
        ORDER BY c.id DESC LIMIT 50
    ),
    w AS (
        SELECT w.reference, w.status, w.client_id, w.mt5_login,
               w.amount_minor, w.currency, w.created_at
        FROM withdrawal w, q
        WHERE w.reference = q.s OR w.client_id = q.s OR w.mt5_login = q.n
        ORDER BY w.id DESC LIMIT 50
    )
    SELECT jsonb_build_object(
        'deposits', coalesce((SELECT jsonb_agg(jsonb_build_object(
                'reference', d.reference, 'client_id', d.client_id,
                'provider', d.provider, 'mt5_server', d.mt5_server,
                'mt5_login', d.mt5_login, 'amount_minor', d.amount_minor,
                'currency', d.currency, 'status', d.status,
                'created_at', d.created_at)) FROM d), '[]'),
        'credits', coalesce((SELECT jsonb_agg(to_jsonb(c)) FROM c), '[]'),
        'withdrawals', coalesce((SELECT jsonb_agg(to_jsonb(w)) FROM w),
                                '[]'))
$$;

REVOKE ALL ON FUNCTION mt5credit.console_search(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.console_search(text)
    TO mt5credit_operator, mt5credit_reader;
