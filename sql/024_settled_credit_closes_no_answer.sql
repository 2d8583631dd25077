--
-- 024: a credit settled closes its own "no answer" case.
--
-- resolve_unresolved() (008) opens an mt5_no_answer case while MT5 gives
-- no complete answer about an unknown credit, and the runbook says it
-- resolves itself when MT5 answers.  Until now nothing closed it: after a
-- soak, cases stayed open for credits long done, and a person could not
-- tell the live ones from the settled.  When a credit becomes done (the
-- lookup found its deal, or after a complete answer without it the next
-- call made it), each of its mt5_no_answer cases still open or assigned
-- is resolved, as `settled_by_lookup`, with an action naming the deal.
-- A case waiting on a person's proposal is left to that person.
--
-- Only mt5_no_answer: every other case about a credit (a conflict, an
-- orphan deal, a rejection) is a question a person must answer.
--

ALTER TABLE mt5credit.case
    DROP CONSTRAINT case_resolution_known,
    ADD CONSTRAINT case_resolution_known
        CHECK (resolution IS NULL
               OR resolution IN ('corrected', 'accepted', 'false_positive',
                                 'duplicate', 'provider_fixed',
                                 'written_off', 'not_money',
                                 'settled_by_lookup'));

-- settled_by_lookup is the system's word, never a person's
ALTER TABLE mt5credit.case
    ADD CONSTRAINT case_settled_only_no_answer
        CHECK (resolution IS DISTINCT FROM 'settled_by_lookup'
               OR kind = 'mt5_no_answer');


CREATE FUNCTION mt5credit.credit_done_closes_no_answer()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = mt5credit, pg_temp
AS $$
DECLARE
    v_case  "case";
BEGIN
    FOR v_case IN
        SELECT * FROM "case"
        WHERE credit_id = NEW.id AND kind = 'mt5_no_answer'
          AND status IN ('open', 'assigned')
        FOR UPDATE
    LOOP
        UPDATE "case"
        SET status = 'resolved', resolution = 'settled_by_lookup',
            resolved_by = credit_actor(), resolved_at = now()
        WHERE id = v_case.id AND status = v_case.status;

        INSERT INTO case_action (case_id, action, actor, before, after, note)
        VALUES (v_case.id, 'resolve', credit_actor(),
                jsonb_build_object('status', v_case.status),
                jsonb_build_object('status', 'resolved',
                                   'resolution', 'settled_by_lookup',
                                   'credit_status', NEW.status,
                                   'deal', NEW.mt5_deal_ticket),
                'MT5 answered: the credit is done with deal '
                || NEW.mt5_deal_ticket);
    END LOOP;

    RETURN NULL;
END
$$;

CREATE TRIGGER credit_done_closes_no_answer
    AFTER UPDATE OF status ON mt5credit.mt5_credit
    FOR EACH ROW
    WHEN (NEW.status = 'done' AND OLD.status IS DISTINCT FROM 'done')
    EXECUTE FUNCTION mt5credit.credit_done_closes_no_answer();
