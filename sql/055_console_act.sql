--
-- 055: the console's actions, one door to the desk's functions.
--
-- POST <console>/api/act carries one JSON object (ngx_mt5_credit_console.c
-- checks its origin, its token and that it is UTF-8 text, then passes it
-- here as one literal, as the person by SET LOCAL ROLE).  console_act()
-- reads it and calls the desk's own function for the action, so the
-- checks are theirs, unchanged: the two-person rule, the states a case
-- may move through, who did it (053's person()), before and after.
--
--   {"action": "assign",   "case": 12, "to": "ann", "note": "..."}
--   {"action": "note",     "case": 12, "note": "...", "evidence": [...]}
--   {"action": "propose",  "case": 12, "proposal_action": "requeue_credit",
--    "credit": 34, "amount": "12.50", "note": "...", "evidence": [...]}
--   {"action": "propose_settle_done", "case": 12, "credit": 34,
--    "ticket": 5678, "note": "...", "evidence": [...]}
--   {"action": "approve" | "reject" | "withdraw", "proposal": 7,
--    "note": "..."}
--   {"action": "resolve",  "case": 12, "resolution": "accepted",
--    "note": "...", "evidence": [...]}
--
-- SECURITY INVOKER: it runs with the person's own rights, so a reader
-- cannot act through it (it is granted to mt5credit_operator only, and
-- each function it calls checks again).  Amounts stay text: case_propose()
-- converts them exactly (023), never through a float.
--

CREATE FUNCTION mt5credit.console_act(p jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_action    text := p->>'action';
    v_evidence  jsonb := coalesce(p->'evidence', '[]');
    v_id        bigint;
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

    ELSE
        RAISE EXCEPTION 'no action "%"', coalesce(v_action, '')
            USING ERRCODE = 'MC094';
    END CASE;

    RETURN jsonb_build_object('action', v_action,
                              'by', console_whoami()->>'person',
                              'id', v_id);
END
$$;

REVOKE ALL ON FUNCTION mt5credit.console_act(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mt5credit.console_act(jsonb)
    TO mt5credit_operator;
