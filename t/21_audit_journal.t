#!/usr/bin/perl
#
# The tamper-evident money journal (sql/081, mt5credit audit, docs/security.md).
# Impossible:
#   - a planted UPDATE, DELETE, INSERT or TRUNCATE of any chained table
#     (a client's name on file among them, 091), by
#     the PostgreSQL superuser around every trigger, going unnoticed, or
#     noticed without the first entry that does not fit named
#   - the journal itself edited, an entry removed, or every hash of a chain
#     recomputed, without a signed period saying so
#   - a head written or changed without the signing key, or one removed
#   - a rewound database (a backup restored after a seal) taken for an
#     edit, or an edit for a rewind
#   - a false alarm after ordinary work, a writer in another time zone, a
#     PostgreSQL restart, or a redacted webhook body (retention keeps the
#     digest)
#   - the auditor's role doing anything but reading what it checks
#   - fewer checks when verify cannot open its second connection (a
#     connection limit): the same checks on one connection, said so

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Bench qw(ingest_one_batch);
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my $conf = $st->worker_config('w1');
my $dir = $sb->dir;

# the key lives with the sealer, the heads where the database cannot write
$sb->audit_witness('auditor');
my $heads = "$dir/witness/heads";

sub audit {
    my ($db, @args) = @_;
    my $conn = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname='
               . ($db || 'mt5credit') . ' user=auditor';
    return Mt5Credit::Worker::run($sb, 'audit', @args, '--database', $conn);
}
sub seal   { audit(undef, 'seal', '--key', "$dir/witness/audit.key",
                   '--heads', $heads) }
sub verify { audit($_[0], 'verify', '--pubkey', "$dir/witness/audit.pub",
                   '--heads', $_[1] || $heads) }
sub work { Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once') }

# --- ordinary money work: every chained table gets facts -------------------

$st->account(login => 73001, balance => '0.00');
$st->account(login => 73002, balance => '0.00');
my @credits = map { $st->pay(login => 73001, amount => 20000 + $_) } 1 .. 4;
push @credits, $st->pay(login => 73002, amount => 15000);
work();
is(join(' ', map { $st->status_of($_) } @credits), join(' ', ('done') x 5),
   'five deposits credited');

# a credit the worker failed, with its case (a fixture), before any round
my $case = $st->failed_with_case($st->pay(login => 73002, amount => 999),
                                 'audit-case-1');

my $ref = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
    . "'alice', 'audit-wd-1', 'stripe', 'live1', 73001, 30000, 'USD', "
    . "'acct_dest_1')", user => 'portal');
my $digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$ref', 'ok')",
                       user => 'ops_alice');
$sb->psql("SELECT mt5credit.withdrawal_approve('$ref', '$digest', 'ok')",
          user => 'ops_bob');
# a login with money from no refundable deposit: paid out, not refunded
$st->account(login => 73003, balance => '500.00');
my $ref2 = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
    . "'alice', 'audit-wd-2', 'stripe', 'live1', 73003, 10000, 'USD', "
    . "'acct_dest_2')", user => 'portal');
$digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$ref2', 'ok')",
                    user => 'ops_alice');
$sb->psql("SELECT mt5credit.withdrawal_approve('$ref2', '$digest', 'ok')",
          user => 'ops_bob');
work();

my $p = $sb->sql1("SELECT mt5credit.case_propose($case, 'requeue_credit', "
                  . "NULL, NULL, 'retry', NULL)", user => 'ops_alice');
$sb->psql("SELECT mt5credit.case_decide($p, 'reject', 'no')",
          user => 'ops_bob');
my $rc_id = $sb->sql1("SELECT mt5credit.risk_rule_propose('credit_amount', "
                      . "'USD', NULL, '90000.00', false, 'x')",
                      user => 'ops_alice');
$sb->psql("SELECT mt5credit.risk_rule_decide($rc_id, 'approve', 'ok')",
          user => 'ops_bob');
# held as it is born: two history rows in its INSERT statement, the
# first entry 1 of its chain without a lookup (088), the second after it
my $held = $st->pay(login => 73002, amount => 9500000);
is($st->status_of($held) . ' ' . $sb->sql1("SELECT string_agg(seq || ':' "
       . "|| (entry->>'to_status'), ',' ORDER BY seq) FROM mt5credit.journal "
       . "WHERE chain = 'credit:$held'"), 'held 1:pending,2:held',
   'a credit held as it is born: its chain, born then held');

# a batch of paid webhooks in one ingest_batch() statement (093): its
# events are one entry, its credits' and deposits' history rows another,
# a credit held as it is born among them
my @batch = map { { ref => $sb->create_deposit(client => 'alice',
                                               login => 73001, amount => $_,
                                               currency => 'USD'),
                    pi => "pi_audit_batch_$_", amount => $_ } }
    3001, 3002, 9600000;
is(ingest_one_batch($sb, int(time), \@batch) >= 0 && $sb->sql1(
       "SELECT count(*) FROM mt5credit.mt5_credit WHERE provider_payment_id "
       . "LIKE 'pi_audit_batch_%'"), 3, 'a batch of three paid webhooks');
my $batch_ids = $sb->sql1("SELECT string_agg(id::text, ',' ORDER BY id) "
    . "FROM mt5credit.mt5_credit WHERE provider_payment_id "
    . "LIKE 'pi_audit_batch_%'");
my $ingest = $sb->psql("SELECT id, chain, seq, "
    . "jsonb_array_length(entry->'credit_history'), "
    . "jsonb_array_length(entry->'deposit_history'), "
    . "(SELECT string_agg(DISTINCT (h->>'credit_id'), ',') "
    . " FROM jsonb_array_elements(entry->'credit_history') h) "
    . "FROM mt5credit.journal WHERE chain LIKE 'ingest:%'");
is(scalar(@$ingest), 1, '... its credits\' and deposits\' history rows are '
   . 'one entry');
is(join(' ', @{ $ingest->[0] }[1 .. 5]),
   'ingest:' . (split /,/, $batch_ids)[0] . " 1 4 3 $batch_ids",
   '... ingest:<first credit> #1: four credit rows (three born, one of '
   . 'them then held), three deposits\' moves to succeeded');
my $ingest_entry = $ingest->[0][0];
is($sb->sql1("SELECT jsonb_array_length(entry->'webhook_event') "
             . "FROM mt5credit.journal WHERE chain LIKE 'events:%' "
             . "ORDER BY id DESC LIMIT 1"), 3,
   '... and its three events one entry of their statement');
is($sb->sql1("SELECT count(*) FROM mt5credit.journal WHERE chain IN ("
             . join(', ', map { "'credit:$_'" } split /,/, $batch_ids)
             . ")"), 0, '... no credit of it entered alone');
work();
is($sb->sql1("SELECT string_agg(chain || ' ' || seq || ' ' "
             . "|| (entry->>'from_status'), ',' ORDER BY chain) "
             . "FROM mt5credit.journal WHERE chain IN ("
             . join(', ', map { "'credit:$_'" } split /,/, $batch_ids)
             . ") AND seq = 1"),
   join(',', map { "credit:$_ 1 pending" }
             sort { "credit:$a" cmp "credit:$b" }
             (split /,/, $batch_ids)[0, 1]),
   '... the two credits claimed afterwards go on in chains of their own, '
   . 'each from #1; the held one has none yet');

# the client's name the payer_name rule reads (091): its row's chain is
# the name's history
$sb->psql("SELECT mt5credit.client_name_set('alice', 'Alice Walker'); "
          . "SELECT mt5credit.client_name_set('alice', 'Alice Mary Walker')",
          user => 'portal');
is($sb->sql1("SELECT string_agg(seq || ':' || (entry->>'name'), ',' "
             . "ORDER BY seq) FROM mt5credit.journal WHERE chain = "
             . "'client_name:' || (SELECT id FROM mt5credit.client_name "
             . "WHERE client_id = 'alice')"),
   '1:Alice Walker,2:Alice Mary Walker',
   'a client\'s name set twice: its chain holds both, in order');
like($sb->psql("DELETE FROM mt5credit.client_name", may_fail => 1),
     qr/append-only|cannot|refuse/i, '... and a name row is never deleted');

my %rows;
for my $t (qw(credit_history deposit_history payout_history
              withdrawal_refund_history case_action withdrawal money_proposal
              risk_rule_change client_name webhook_event)) {
    $rows{$t} = $sb->sql1("SELECT count(*) FROM mt5credit.$t");
}
is(scalar(grep { $rows{$_} > 0 } keys %rows), 10,
   'every chained table has facts: '
   . join(', ', map { "$_ $rows{$_}" } sort keys %rows));
is($sb->sql1("SELECT count(*) FROM mt5credit.journal WHERE chain ~ "
             . "'^(credit|deposit|payout|refund|case):'")
   + $sb->sql1("SELECT sum(jsonb_array_length(entry->'credit_history') "
               . "+ jsonb_array_length(entry->'deposit_history')) "
               . "FROM mt5credit.journal WHERE chain LIKE 'ingest:%'"),
   $sb->sql1("SELECT (SELECT count(*) FROM mt5credit.credit_history) "
             . "+ (SELECT count(*) FROM mt5credit.deposit_history) "
             . "+ (SELECT count(*) FROM mt5credit.payout_history) "
             . "+ (SELECT count(*) FROM mt5credit.withdrawal_refund_history) "
             . "+ (SELECT count(*) FROM mt5credit.case_action)"),
   'each history row in one entry: its own, or its batch\'s');
is($sb->sql1("SELECT sum(jsonb_array_length(entry->'webhook_event')) "
             . "FROM mt5credit.journal WHERE chain LIKE 'events:%'"),
   $rows{webhook_event}, '... and each stored webhook in its statement\'s');
is($sb->sql1("SELECT count(DISTINCT chain) FROM mt5credit.journal "
             . "WHERE source = 'withdrawal'"), 2, 'each withdrawal\'s states '
   . 'are one chain ...');
cmp_ok($sb->sql1("SELECT max(seq) FROM mt5credit.journal WHERE chain = "
                 . "'withdrawal:' || (SELECT id FROM mt5credit.withdrawal "
                 . "WHERE reference = '$ref')"), '>=', 3,
       '... of at least three (requested, prepared, approved)');

# --- seal, verify ------------------------------------------------------------

my ($rc, $out) = verify();
is($rc, 3, 'no heads file: verify cannot check (not "nothing sealed")');
like($out, qr/--heads .*no such file/, '... and says why');
{ open my $fh, '>', $heads or die; }
($rc, $out) = verify();
is($rc, 0, 'an empty heads file, nothing sealed yet: the chains and facts '
   . 'fit') or diag $out;
($rc, $out) = seal();
is($rc, 0, 'sealed') or diag $out;
like($out, qr/^audit seal: period 1: \d+ entries/m, '... period 1');
my @lines = do { open my $fh, '<', $heads or die; <$fh> };
like($lines[0], qr/^[0-9a-f]{128} \{"period":1,/, '... one signed head');
($rc, $out) = seal();
like($out, qr/nothing finished since period 1/,
     'sealed again with nothing new: no empty period');

$st->pay(login => 73002, amount => 777);
work();
($rc, $out) = verify();
is($rc, 0, 'more work after the seal: it fits') or diag $out;
seal();
($rc, $out) = verify();
is($rc, 0, 'two periods: it fits') or diag $out;
like($out, qr/2 periods sealed and signed/, '... both checked');

$sb->psql("SET TimeZone = 'Pacific/Chatham'; SELECT mt5credit.case_note("
          . "$case, 'written from a session in UTC+13:45', NULL)",
          user => 'ops_alice');
($rc, $out) = verify();
is($rc, 0, 'a fact written by a session in another time zone: it fits')
    or diag $out;

$sb->stop_postgres;
$sb->start_postgres;
($rc, $out) = verify();
is($rc, 0, 'after a PostgreSQL restart: it fits') or diag $out;

$sb->psql("UPDATE mt5credit.webhook_event SET raw_body = '', "
          . "body_redacted_at = now() WHERE id = (SELECT min(id) FROM "
          . "mt5credit.webhook_event)");
($rc, $out) = verify();
is($rc, 0, 'a body emptied by retention (its digest kept): it fits')
    or diag $out;

# --- the auditor's role ------------------------------------------------------

like($sb->psql("DELETE FROM mt5credit.journal", user => 'auditor',
               may_fail => 1), qr/permission denied/,
     'the auditor cannot write the journal');
like($sb->psql("SELECT count(*) FROM mt5credit.mt5_credit", user => 'auditor',
               may_fail => 1), qr/permission denied/,
     '... nor read what it does not check');
like($sb->psql("UPDATE mt5credit.journal SET seq = seq", may_fail => 1),
     qr/append-only|cannot|refuse/i,
     'the journal refuses an UPDATE, even the owner\'s');

# --- tampering, each on its own copy of the database -------------------------

sub on_db {
    my ($db, $sql) = @_;
    local $sb->{db} = $db;
    return $sb->psql($sql);
}

my $copies = 0;
sub tampered {
    my ($what, $sql) = @_;
    my $db = 'tamper_' . ++$copies;
    $sb->psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
              . "WHERE datname = 'mt5credit' AND pid <> pg_backend_pid()");
    on_db('postgres', "CREATE DATABASE $db TEMPLATE mt5credit");
    # a superuser around every trigger, the journal's included
    on_db($db, "SET session_replication_role = replica;\n$sql");
    my @r = verify($db);
    on_db('postgres', "DROP DATABASE $db");
    return @r;
}

# the newest entry that holds row $id of table $t: its own, or its
# statement's (093)
sub entry_of {
    my ($t, $id) = @_;
    return $sb->sql1("SELECT max(id) FROM mt5credit.journal "
                     . "WHERE (source = '$t' AND source_id = $id) "
                     . "OR entry->'$t' @> '[{\"id\": $id}]'");
}

my %pick = (
    credit_history            => 'credit_id',
    deposit_history           => 'deposit_id',
    payout_history            => 'payout_id',
    withdrawal_refund_history => 'refund_id',
    case_action               => 'case_id',
    withdrawal                => 'id',
    money_proposal            => 'id',
    risk_rule_change          => 'id',
    client_name               => 'id',
    webhook_event             => 'id',
);
my %change = (
    credit_history            => "actor = 'mallory'",
    deposit_history           => "actor = 'mallory'",
    payout_history            => "actor = 'mallory'",
    withdrawal_refund_history => "actor = 'mallory'",
    case_action               => "actor = 'mallory'",
    withdrawal                => "note = 'paid to acct_mallory'",
    money_proposal            => "note = 'mallory'",
    risk_rule_change          => "limit_minor = 1",
    client_name               => "name = 'Mallory Walker'",
    webhook_event             => "provider_event_id = 'evt_mallory'",
);

# a planted row must not collide with a unique key
my %unique = map { $_ => $change{$_} } keys %change;
$unique{withdrawal} = "idempotency_key = 'planted-0001'";
$unique{webhook_event} = "provider_event_id = 'evt_planted'";
$unique{client_name} = "client_id = 'planted-client'";
$unique{money_proposal} = "status = 'rejected', decided_by = 'mallory', "
                          . "decided_at = now()";

for my $t (sort keys %pick) {
    my $id = $sb->sql1("SELECT max(id) FROM mt5credit.$t");
    my $entry = entry_of($t, $id);

    ($rc, $out) = tampered($t, "UPDATE mt5credit.$t SET $change{$t} "
                               . "WHERE id = $id");
    is($rc, 1, "$t: an UPDATE is found") or diag $out;
    like($out, qr/the first: journal entry $entry \(.*row $id\): the fact in $t is not what was entered/,
         "... naming its entry ($entry)");

    ($rc, $out) = tampered($t, "DELETE FROM mt5credit.$t WHERE id = $id");
    is($rc, 1, "$t: a DELETE is found") or diag $out;
    like($out, qr/journal entry $entry .*its fact is gone from $t/,
         '... naming the entry whose fact is gone');

    my $new = $id + 1000000;
    ($rc, $out) = tampered($t, <<"SQL");
CREATE TEMP TABLE planted AS SELECT * FROM mt5credit.$t WHERE id = $id;
UPDATE planted SET id = $new, $unique{$t};
DO \$\$
DECLARE
    cols text;
BEGIN
    SELECT string_agg(quote_ident(column_name), ', ') INTO cols
    FROM information_schema.columns
    WHERE table_schema = 'mt5credit' AND table_name = '$t'
      AND is_generated = 'NEVER';
    EXECUTE format('INSERT INTO mt5credit.%I (%s) OVERRIDING SYSTEM VALUE '
                   'SELECT %s FROM planted', '$t', cols, cols);
END
\$\$;
SQL
    is($rc, 1, "$t: an INSERT is found") or diag $out;
    like($out, qr/row $new: a fact in $t with no entry/,
         '... naming the row with no entry');

    ($rc, $out) = tampered($t, "TRUNCATE mt5credit.$t CASCADE");
    is($rc, 1, "$t: a TRUNCATE is found") or diag $out;
    like($out, qr/its fact is gone from $t/, '... every entry\'s fact gone');
}

# a batch's rows, in their statement's entries (093)
{
    my $held_row = $sb->sql1("SELECT max(id) FROM mt5credit.credit_history "
        . "WHERE to_status = 'held' AND credit_id IN ($batch_ids)");
    ($rc, $out) = tampered('credit_history', "UPDATE mt5credit.credit_history "
        . "SET actor = 'mallory' WHERE id = $held_row");
    like($out, qr/the first: journal entry $ingest_entry \(ingest:\d+, row $held_row\): the fact in credit_history is not what was entered/,
         'a batch\'s credit row changed: found, naming the batch\'s entry');
    my $moved = $sb->sql1("SELECT min(id) FROM mt5credit.deposit_history "
        . "WHERE to_status = 'succeeded' AND deposit_id IN (SELECT deposit_id "
        . "FROM mt5credit.mt5_credit WHERE id IN ($batch_ids))");
    ($rc, $out) = tampered('deposit_history', "DELETE FROM "
        . "mt5credit.deposit_history WHERE id = $moved");
    like($out, qr/journal entry $ingest_entry \(ingest:\d+, row $moved\): its fact is gone from deposit_history/,
         'a batch\'s deposit move deleted: found, naming the batch\'s entry');
    my $ev_row = $sb->sql1("SELECT id FROM mt5credit.webhook_event WHERE "
        . "credit_id = " . (split /,/, $batch_ids)[1]);
    my $ev_entry = entry_of('webhook_event', $ev_row);
    ($rc, $out) = tampered('webhook_event', "UPDATE mt5credit.webhook_event "
        . "SET provider_event_id = 'evt_mallory' WHERE id = $ev_row");
    like($out, qr/the first: journal entry $ev_entry \(events:\d+, row $ev_row\): the fact in webhook_event is not what was entered/,
         'a batch\'s event changed: found, naming its statement\'s entry');
    ($rc, $out) = tampered('journal', "UPDATE mt5credit.journal SET entry = "
        . "jsonb_set(entry, '{credit_history}', (entry->'credit_history') "
        . "- 0) WHERE id = $ingest_entry");
    like($out, qr/the first: journal entry $ingest_entry .*hash is not of its content/,
         'a row taken out of a batch\'s entry: its hash does not fit');
    like($out, qr/a fact in credit_history with no entry/,
         '... and the row it held has none');
    ($rc, $out) = tampered('journal', "UPDATE mt5credit.journal SET entry = "
        . "jsonb_set(entry, '{deposit_history}', '{\"not\": \"rows\"}') "
        . "WHERE id = $ingest_entry");
    is($rc, 1, 'a batch\'s entry made to hold no array: verify still runs '
       . 'and finds it') or diag $out;
    like($out, qr/a fact in deposit_history with no entry/,
         '... its rows with no entry');
}

# the batch's map of actors is no way around the journal: ingest() called
# by the edge with a map it set itself writes its deposit's move while
# the map is set, and that row, which no entry holds, is named
{
    my $ref = $sb->create_deposit(client => 'alice', login => 73001,
                                  amount => 4444, currency => 'USD');
    $sb->psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
              . "WHERE datname = 'mt5credit' AND pid <> pg_backend_pid()");
    on_db('postgres', "CREATE DATABASE map_ingest TEMPLATE mt5credit");
    my $body = stripe_event(type => 'payment_intent.succeeded',
                            deposit => $ref, pi => 'pi_audit_map',
                            id => 'evt_audit_map', amount => 4444);
    my $r = $sb->psql("SELECT set_config('mt5credit.actors', chr(30) || "
        . "'c1' || chr(31) || 'someone' || chr(30), false); "
        . "SELECT outcome FROM mt5credit.ingest('stripe', NULL, "
        . "'\\x" . unpack('H*', $body) . "'::bytea, 'stripe', "
        . int(time) . ", NULL)", user => 'edge', db => 'map_ingest');
    is($r->[-1][0], 'credit_created', 'ingest() called with a map of '
       . 'actors its caller set');
    my $row = on_db('map_ingest', "SELECT h.id FROM mt5credit.deposit_history "
                    . "h JOIN mt5credit.deposit d ON d.id = h.deposit_id "
                    . "WHERE d.reference = '$ref' AND h.to_status = "
                    . "'succeeded'")->[0][0];
    ($rc, $out) = verify('map_ingest');
    on_db('postgres', "DROP DATABASE map_ingest");
    is($rc, 1, '... its deposit\'s move, written while the map was set and '
       . 'held by no entry: found') or diag $out;
    like($out, qr/row $row: a fact in deposit_history with no entry/,
         '... and named');
}

# a webhook changed after it was stored (its disposition, as a replay
# sets it) is entered alone, event:<id> #1; the statement entry it was
# stored with, removed, is still missed
{
    my $ev = $sb->sql1("SELECT max(id) FROM mt5credit.webhook_event");
    $sb->psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
              . "WHERE datname = 'mt5credit' AND pid <> pg_backend_pid()");
    on_db('postgres', "CREATE DATABASE event_born TEMPLATE mt5credit");
    on_db('event_born', "UPDATE mt5credit.webhook_event SET detail = "
          . "coalesce(detail || ' ', '') || 'replayed' WHERE id = $ev");
    my $stored = on_db('event_born', "SELECT min(id) FROM mt5credit.journal "
        . "WHERE chain LIKE 'events:%' AND entry->'webhook_event' @> "
        . "'[{\"id\": $ev}]'")->[0][0];
    my $n = on_db('event_born', "SELECT jsonb_array_length("
        . "entry->'webhook_event') FROM mt5credit.journal WHERE id = "
        . "$stored")->[0][0];
    is(on_db('event_born', "SELECT string_agg(chain || ' #' || seq, ',') "
             . "FROM mt5credit.journal WHERE chain = 'event:$ev'")->[0][0],
       "event:$ev #1", 'a stored webhook changed: its change entered alone, '
       . "#1 (its statement's entry held $n)");
    ($rc, $out) = verify('event_born');
    is($rc, 0, '... and it fits') or diag $out;
    on_db('event_born', "SET session_replication_role = replica; DELETE "
          . "FROM mt5credit.journal WHERE id = $stored");
    ($rc, $out) = verify('event_born');
    on_db('postgres', "DROP DATABASE event_born");
    is($rc, 1, '... the statement entry it was stored with removed: found')
        or diag $out;
    like($out, qr/row $ev: a stored webhook that no statement entry holds/,
         '... naming the webhook');
}

# a batch's row entered alone too: entered twice, and named
{
    my $held_row = $sb->sql1("SELECT max(id) FROM mt5credit.credit_history "
        . "WHERE to_status = 'held' AND credit_id IN ($batch_ids)");
    ($rc, $out) = tampered('journal', "SELECT mt5credit.journal_append("
        . "'credit:' || h.credit_id, 'credit_history', h.id, to_jsonb(h)) "
        . "FROM mt5credit.credit_history h WHERE h.id = $held_row");
    is($rc, 1, 'a batch\'s row also entered alone: found') or diag $out;
    like($out, qr/row $held_row\): a fact in credit_history entered more than once/,
         '... as entered more than once');
}

# the journal itself
my ($first) = $sb->sql1("SELECT min(id) FROM mt5credit.journal "
                        . "WHERE source = 'credit_history'");
($rc, $out) = tampered('journal', "UPDATE mt5credit.journal SET entry = "
    . "entry || '{\"actor\": \"mallory\"}' WHERE id = $first");
like($out, qr/the first: journal entry $first .*hash is not of its content/,
     'an entry edited: its hash does not fit, and it is named');
my $chain_second = $sb->sql1("SELECT id FROM mt5credit.journal WHERE chain = "
    . "(SELECT chain FROM mt5credit.journal WHERE id = $first) AND seq = 2");
($rc, $out) = tampered('journal', "DELETE FROM mt5credit.journal "
                                  . "WHERE id = $first");
like($out, qr/journal entry $chain_second .*no #1 before it/,
     'an entry removed: the chain says so at the next one');

# the journal's unhashed columns do not decide which row an entry is of
my $wd_entry = $sb->sql1("SELECT max(id) FROM mt5credit.journal "
                         . "WHERE source = 'withdrawal'");
($rc, $out) = tampered('journal', "UPDATE mt5credit.journal SET source = "
    . "'elsewhere' WHERE id = $wd_entry; UPDATE mt5credit.withdrawal SET "
    . "note = 'mallory' WHERE id = (SELECT source_id FROM mt5credit.journal "
    . "WHERE id = $wd_entry)");
like($out, qr/journal entry $wd_entry .*its source is not its chain's/,
     'an entry\'s source column changed: found');
like($out, qr/the fact in withdrawal is not what was entered/,
     '... and the row it hid still compared with its entry');

# a stored body is the one its digest names
my $ev = $sb->sql1("SELECT max(id) FROM mt5credit.webhook_event "
                   . "WHERE body_redacted_at IS NULL");
($rc, $out) = tampered('webhook_event', "UPDATE mt5credit.webhook_event SET "
    . "raw_body = raw_body || '\\x20'::bytea WHERE id = $ev");
like($out, qr/journal entry ${\ entry_of('webhook_event', $ev) } \(events:\d+, row $ev\): its stored body is not the one its digest names/,
     'a stored webhook body changed: found against its digest, naming the '
     . 'entry it was stored with');

# every hash of a chain recomputed after an edit: only the signed root knows
my $resign = <<"SQL";
UPDATE mt5credit.journal SET entry = entry || '{"actor": "mallory"}'
WHERE id = $first;
UPDATE mt5credit.credit_history h SET actor = 'mallory'
FROM mt5credit.journal j WHERE j.id = $first AND h.id = j.source_id;
DO \$\$
DECLARE
    e record;
    v_prev bytea;
BEGIN
    FOR e IN SELECT * FROM mt5credit.journal WHERE chain =
             (SELECT chain FROM mt5credit.journal WHERE id = $first)
             ORDER BY seq
    LOOP
        v_prev := coalesce(v_prev, ('\\x' || repeat('00', 32))::bytea);
        UPDATE mt5credit.journal SET prev_hash = v_prev,
            hash = sha256(v_prev || convert_to(chain || E'\\n' || seq
                          || E'\\n' || entry::text, 'UTF8'))
        WHERE id = e.id RETURNING hash INTO v_prev;
    END LOOP;
END
\$\$;
SQL
($rc, $out) = tampered('journal', $resign);
is($rc, 1, 'a chain and its fact rewritten consistently: found') or diag $out;
like($out, qr/^EDIT: period 1 .*root is not the signed one/m,
     '... by the signed root of its period');
unlike($out, qr/REWIND/, '... as an edit, not a rewind');

# verify's second connection (the facts, beside the journal's reading)
# cannot be had: one connection does every check, and says so
$sb->psql('ALTER ROLE auditor CONNECTION LIMIT 1');
($rc, $out) = verify();
is($rc, 0, 'one connection only (the auditor\'s limit): it fits') or diag $out;
like($out, qr/no second connection .* compared on this one/,
     '... and verify says it checked the facts on one');
{
    my $t = 'credit_history';
    my $id = $sb->sql1("SELECT max(id) FROM mt5credit.$t");
    my $entry = $sb->sql1("SELECT max(id) FROM mt5credit.journal "
                          . "WHERE source = '$t' AND source_id = $id");
    ($rc, $out) = tampered($t, "UPDATE mt5credit.$t SET actor = 'mallory' "
                               . "WHERE id = $id");
    is($rc, 1, '... and on one connection a planted UPDATE is still found')
        or diag $out;
    like($out, qr/the first: journal entry $entry \(/,
         '... naming its entry');
}
$sb->psql('ALTER ROLE auditor CONNECTION LIMIT -1');

# --- the heads -----------------------------------------------------------------

{
    my @h = do { open my $fh, '<', $heads or die; <$fh> };
    open my $fh, '>', "$dir/witness/forged" or die;
    (my $forged = $h[0]) =~ s/"entries":(\d+)/'"entries":' . ($1 + 1)/e;
    print $fh $forged, @h[1 .. $#h];
    close $fh;
    ($rc, $out) = verify(undef, "$dir/witness/forged");
    is($rc, 1, 'a head changed without the key: refused');
    like($out, qr/line 1: the signature does not fit/, '... naming its line');
    open $fh, '>', "$dir/witness/dropped" or die;
    print $fh @h[1 .. $#h];
    close $fh;
    ($rc, $out) = verify(undef, "$dir/witness/dropped");
    like($out, qr/line 1: period 2 does not follow/,
         'a head removed: the next one does not follow');
}

# --- what a seal appends to ---------------------------------------------------

sub seal_to { audit(undef, 'seal', '--key', "$dir/witness/audit.key",
                    '--heads', @_) }
sub slurp { open my $fh, '<', $_[0] or return ''; local $/; <$fh> }
sub spew { open my $fh, '>', $_[0] or die; print $fh @_[1 .. $#_]; close $fh }

# a head signed here, as a sealer on another timeline or ahead would have
sub signed_head {
    my (%f) = @_;
    my $text = '{"period":1,"from_xid":"0","to_xid":"' . $f{to_xid}
        . '","entries":1,"last_id":1,"root":"' . ('0' x 64) . '","prev":"'
        . ('0' x 64) . '","system_identifier":"' . $f{system_identifier}
        . '","timeline":' . $f{timeline}
        . ',"sealed_at":"2026-01-01T00:00:00Z"}';
    spew("$dir/witness/head.txt", $text);
    system('openssl', 'pkeyutl', '-sign', '-rawin', '-inkey',
           "$dir/witness/audit.key", '-in', "$dir/witness/head.txt", '-out',
           "$dir/witness/head.sig") == 0 or die 'openssl pkeyutl';
    return unpack('H*', slurp("$dir/witness/head.sig")) . " $text\n";
}

{
    my @h = do { open my $fh, '<', $heads or die; <$fh> };
    my $whole = join '', @h;
    $st->pay(login => 73002, amount => 4321);
    work();

    my $before = slurp("$dir/witness/forged");
    ($rc, $out) = seal_to("$dir/witness/forged");
    is($rc, 1, 'a seal onto a head changed without the key: refused');
    like($out, qr/line 1: the signature does not fit.*\n.*refused: the heads file does not fit/s,
         '... saying which line and that nothing was appended');
    is(slurp("$dir/witness/forged"), $before, '... and nothing was');
    ($rc, $out) = seal_to("$dir/witness/dropped");
    is($rc, 1, 'a seal onto heads with one removed: refused');
    like($out, qr/period 2 does not follow/, '... naming the head out of order');

    # a seal that crashed mid-write left part of its line
    my $torn = substr($h[-1], 0, 100);
    spew("$dir/witness/torn", $whole, $torn);
    ($rc, $out) = verify(undef, "$dir/witness/torn");
    is($rc, 0, 'verify with a torn last line: the whole heads fit') or diag $out;
    like($out, qr/torn line .*left out/, '... and it says the line is torn');
    ($rc, $out) = seal_to("$dir/witness/torn");
    is($rc, 0, 'a torn last line does not block the next seal') or diag $out;
    like($out, qr/torn line .*set aside in \S+torn\.torn/,
         '... which says it set the torn bytes aside');
    is(slurp("$dir/witness/torn.torn"), "$torn\n", '... keeping them');
    my @after = do { open my $fh, '<', "$dir/witness/torn" or die; <$fh> };
    is(scalar(@after), @h + 1, '... and sealed after the last whole head');
    like($after[-1], qr/"period":${\(@h + 1)},/, '... as the next period');
    ($rc, $out) = verify(undef, "$dir/witness/torn");
    is($rc, 0, '... which verify takes') or diag $out;

    # a whole head that lost only its newline was sealed: it is kept
    (my $unended = $whole) =~ s/\n\z//;
    spew("$dir/witness/unended", $unended);
    ($rc, $out) = seal_to("$dir/witness/unended");
    is($rc, 0, 'a last head without its newline: sealed after it') or diag $out;
    like($out, qr/lost its newline: ended it/, '... ending it, not dropping it');
    @after = do { open my $fh, '<', "$dir/witness/unended" or die; <$fh> };
    is(scalar(@after), @h + 1, '... every head kept');

    # the database is not on the timeline of the last head
    my $sysid = $sb->sql1("SELECT system_identifier "
                          . "FROM mt5credit.database_timeline_now()");
    my $tl = $sb->sql1("SELECT timeline "
                       . "FROM mt5credit.database_timeline_now()");
    my $xmin = $sb->sql1("SELECT pg_snapshot_xmin(pg_current_snapshot())");
    spew("$dir/witness/other_tl", signed_head(to_xid => 3,
         system_identifier => $sysid, timeline => $tl + 1));
    ($rc, $out) = seal_to("$dir/witness/other_tl");
    is($rc, 1, 'a seal after a failover (another timeline): refused')
        or diag $out;
    like($out, qr/refused: the database is on timeline $tl .*sealed on timeline ${\($tl + 1)}.*verify/,
         '... saying to verify first');
    ($rc, $out) = seal_to("$dir/witness/other_tl", '--new-timeline');
    is($rc, 0, '... and sealed with --new-timeline, once verify fits')
        or diag $out;
    like($out, qr/^audit seal: period 2: /m, '... as the next period');

    spew("$dir/witness/ahead", signed_head(to_xid => $xmin + 1000000,
         system_identifier => $sysid, timeline => $tl));
    ($rc, $out) = seal_to("$dir/witness/ahead", '--new-timeline');
    is($rc, 1, 'a seal on a database behind its last head: refused, even '
       . 'with --new-timeline') or diag $out;
    like($out, qr/stop short of period 1's end.*went back in time/,
         '... as a database that went back in time');
}

# --- a rewind: a backup from before the last seal ------------------------------

$sb->psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
          . "WHERE datname = 'mt5credit' AND pid <> pg_backend_pid()");
on_db('postgres', "CREATE DATABASE before_seal TEMPLATE mt5credit");
$st->pay(login => 73002, amount => 1234);
work();
seal();
($rc, $out) = verify();
is($rc, 0, 'three periods sealed: it fits') or diag $out;
# the old copy stands for the database restored from a backup: it lacks
# what period 3 signed
($rc, $out) = verify('before_seal');
is($rc, 1, 'a database from before the last seal does not fit') or diag $out;
like($out, qr/^REWIND: period 3 /m, '... and is called a rewind');
unlike($out, qr/^EDIT: period/m, '... not an edit');

done_testing;
