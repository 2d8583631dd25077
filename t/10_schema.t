#!/usr/bin/perl
#
# The schema makes these impossible:
#   - a migration applied twice, or changed after it was applied
#   - a double click making two deposits; an idempotency key reused for a
#     different deposit
#   - a deposit to a login the client does not own, or a closed account
#   - a client reading another client's deposit status
#   - a currency conversion without its rate, source and time, or with a
#     rate when no conversion happens
#   - a credit whose login or currency differs from its deposit's
#   - a credit skipping a state (pending -> done), done without a deal
#     ticket, a ticket replaced, its amount changed after creation
#   - a status change without a history row; history rewritten
#   - the edge's role reading or changing any table, or calling anything
#     but ingest(); the portal's role calling ingest()

use strict;
use warnings;

use Digest::SHA qw(sha256_hex);
use File::Copy qw(copy);
use Test::More;

use lib 't/lib';
use Mt5Credit::Sandbox;

my $sb = Mt5Credit::Sandbox->new;
$sb->start_postgres;

# --- migrations ---------------------------------------------------------

my $applied = $sb->sql1('SELECT count(*) FROM mt5credit.schema_migration');
my @files = glob("$Mt5Credit::Sandbox::ROOT/sql/[0-9][0-9][0-9]_*.sql");
is($applied, scalar @files, 'every migration file is recorded once');

like($sb->migrate, qr/0 applied/, 'applying again applies nothing');
is($sb->sql1('SELECT count(*) FROM mt5credit.schema_migration'), $applied,
   'and records nothing');

{
    # a copy of sql/ with one applied migration edited
    my $copy = $sb->dir . '/sql-edited';
    mkdir $copy;
    copy($_, $copy) for @files, "$Mt5Credit::Sandbox::ROOT/sql/migrate";
    chmod 0755, "$copy/migrate";
    open my $fh, '>>', "$copy/002_currency.sql" or die;
    print $fh "\n-- edited\n";
    close $fh;
    my $out = `$copy/migrate @{[ $sb->psql_args ]} 2>&1`;
    isnt($?, 0, 'an applied migration that changed is refused');
    like($out, qr/002_currency.*changed after it was applied/,
         'and the error names the file');
}

# --- accounts and deposits ----------------------------------------------

$sb->psql(<<'SQL', user => 'portal');
SELECT mt5credit.register_account('alice', 'live1', 1001, 'USD');
SELECT mt5credit.register_account('alice', 'live1', 1002, 'EUR');
SELECT mt5credit.register_account('bob', 'live1', 2001, 'USD');
SQL

like($sb->psql("SELECT mt5credit.register_account('bob','live1',1001,'USD')",
               user => 'portal', may_fail => 1),
     qr/registered to another client/,
     'a login cannot be registered to a second client');

sub deposit {
    my (%d) = @_;
    my $fx = $d{rate}
        ? ", $d{rate}, 'ecb-ref', '2026-11-29T08:00:00Z'" : '';
    return "SELECT id, reference, credit_amount_minor, account_currency "
         . "FROM mt5credit.create_deposit('$d{client}', '$d{key}', 'stripe', "
         . "'live1', $d{login}, $d{amount}, '$d{currency}'$fx)";
}

my $first = $sb->psql(deposit(client => 'alice', key => 'click-0001',
                              login => 1001, amount => 50000,
                              currency => 'USD'), user => 'portal');
my $again = $sb->psql(deposit(client => 'alice', key => 'click-0001',
                              login => 1001, amount => 50000,
                              currency => 'USD'), user => 'portal');
is($again->[0][0], $first->[0][0], 'the same key twice is the same deposit');
is($sb->sql1('SELECT count(*) FROM mt5credit.deposit'), 1,
   'a double click made one deposit');
like($first->[0][1], qr/^dep_\d{6,}$/, 'the deposit has a reference');

like($sb->psql(deposit(client => 'alice', key => 'click-0001', login => 1001,
                       amount => 50001, currency => 'USD'),
               user => 'portal', may_fail => 1),
     qr/already used .* different parameters/,
     'the same key with another amount is an error');

like($sb->psql(deposit(client => 'bob', key => 'click-0002', login => 1001,
                       amount => 100, currency => 'USD'),
               user => 'portal', may_fail => 1),
     qr/does not own/, 'a login the client does not own is refused');

$sb->psql("UPDATE mt5credit.client_account SET status = 'closed', "
          . "closed_at = now() WHERE mt5_login = 2001");
like($sb->psql(deposit(client => 'bob', key => 'click-0003', login => 2001,
                       amount => 100, currency => 'USD'),
               user => 'portal', may_fail => 1),
     qr/does not own an active/, 'a closed account takes no deposit');

like($sb->psql(deposit(client => 'alice', key => 'click-0004', login => 1002,
                       amount => 10000, currency => 'USD'),
               user => 'portal', may_fail => 1),
     qr/needs an FX rate/, 'a conversion without a rate is refused');

like($sb->psql(deposit(client => 'alice', key => 'click-0005', login => 1001,
                       amount => 10000, currency => 'USD', rate => '1.0'),
               user => 'portal', may_fail => 1),
     qr/no FX rate may be given/, 'a rate where none applies is refused');

my $fx = $sb->psql(deposit(client => 'alice', key => 'click-0006',
                           login => 1002, amount => 10001, currency => 'USD',
                           rate => '0.92345'), user => 'portal');
is($fx->[0][2], 9235, 'USD 100.01 at 0.92345 is EUR 92.35 (exact, once)');
is($fx->[0][3], 'EUR', 'credited in the account currency');
is($sb->sql1("SELECT fx_rate || ' ' || fx_source FROM mt5credit.deposit "
             . "WHERE id = $fx->[0][0]"), '0.92345 ecb-ref',
   'the rate and its source are stored on the row');

my $jpy = $sb->psql(deposit(client => 'alice', key => 'click-0007',
                            login => 1002, amount => 123456,
                            currency => 'JPY', rate => '0.0061'),
                    user => 'portal');
is($jpy->[0][2], 75308, 'JPY 123456 (0 digits) at 0.0061 is EUR 753.08');

like($sb->psql(<<'SQL', may_fail => 1),
INSERT INTO mt5credit.deposit (client_id, idempotency_key, provider,
    mt5_server, mt5_login, amount_minor, currency, account_currency,
    credit_amount_minor)
VALUES ('bob', 'direct-0001', 'stripe', 'live1', 1001, 1, 'USD', 'USD', 1)
SQL
     qr/foreign key/, 'even the owner cannot file a deposit on a foreign login');

is($sb->sql1("SELECT status || ' ' || coalesce(credit_status, '-') FROM "
             . "mt5credit.deposit_status('alice', '$first->[0][1]')",
             user => 'portal'), 'created -', 'the return page reads a status');
is($sb->sql1("SELECT count(*) FROM "
             . "mt5credit.deposit_status('bob', '$first->[0][1]')",
             user => 'portal'), 0, "but never another client's deposit");

# --- credits --------------------------------------------------------------

my $dep = $first->[0][0];

sub credit_sql {
    my (%c) = @_;
    my $login = $c{login} || 1001;
    my $cur = $c{currency} || 'USD';
    my $amount = $c{amount} // 50000;
    return <<"SQL";
INSERT INTO mt5credit.mt5_credit (kind, direction, deposit_id, provider,
    provider_payment_id, mt5_server, mt5_login, amount_minor, currency,
    paid_amount_minor, paid_currency)
VALUES ('deposit', 'credit', $dep, 'stripe', '$c{key}', 'live1', $login,
        $amount, '$cur', $amount, '$cur') RETURNING id
SQL
}

like($sb->psql(credit_sql(key => 'pi_a', login => 2001), may_fail => 1),
     qr/foreign key/, "a credit cannot name another login than its deposit's");
like($sb->psql(credit_sql(key => 'pi_a', currency => 'EUR'), may_fail => 1),
     qr/foreign key/, "nor another currency");
like($sb->psql(credit_sql(key => 'pi_a', amount => 0), may_fail => 1),
     qr/check constraint/, 'nor a zero amount');

my $credit = $sb->sql1(credit_sql(key => 'pi_a'));
ok($credit, 'a credit matching its deposit is created');
is($sb->sql1("SELECT reference FROM mt5credit.mt5_credit "
             . "WHERE id = $credit"), 'dep:' . substr(sha256_hex('stripe:pi_a'),
                                                      0, 18),
   "its MT5 reference is its payment's: dep:<sha256(provider:payment)>, "
   . '18 hex digits, the same on any timeline (066)');
like($sb->psql("UPDATE mt5credit.mt5_credit SET reference_form = 3 "
               . "WHERE id = $credit", may_fail => 1),
     qr/check constraint/, 'a reference form is 1 (numbered) or 2, no other');

like($sb->psql(credit_sql(key => 'pi_b'), may_fail => 1),
     qr/mt5_credit_one_per_deposit/, 'a second payment cannot credit the same deposit');

like($sb->psql("UPDATE mt5credit.mt5_credit SET status = 'done', "
               . "mt5_deal_ticket = 7, attempts = 1 WHERE id = $credit",
               may_fail => 1),
     qr/pending -> done is not a legal transition/,
     'pending cannot jump to done');

like($sb->psql("UPDATE mt5credit.mt5_credit SET amount_minor = 1 "
               . "WHERE id = $credit", may_fail => 1),
     qr/immutable/, 'the amount never changes after creation');

$sb->psql(<<"SQL");
BEGIN;
SELECT set_config('mt5credit.actor', 'worker:test', true);
UPDATE mt5credit.mt5_credit SET status = 'claimed', attempts = attempts + 1,
    claimed_at = now(), claimed_by = 'worker:test',
    lease_expires_at = now() + interval '2 minutes'
WHERE id = $credit AND status = 'pending';
COMMIT;
SQL

like($sb->psql("UPDATE mt5credit.mt5_credit SET status = 'done' "
               . "WHERE id = $credit", may_fail => 1),
     qr/check constraint/, 'done without a deal ticket is unrepresentable');

$sb->psql("UPDATE mt5credit.mt5_credit SET status = 'done', "
          . "mt5_deal_ticket = 900001 WHERE id = $credit");

like($sb->psql("UPDATE mt5credit.mt5_credit SET mt5_deal_ticket = 900002 "
               . "WHERE id = $credit", may_fail => 1),
     qr/already has deal ticket/, 'a recorded deal ticket is never replaced');

my $hist = $sb->psql("SELECT coalesce(from_status, '-'), to_status, actor "
                     . "FROM mt5credit.credit_history WHERE credit_id = "
                     . "$credit ORDER BY id");
is_deeply([ map { "$_->[0]>$_->[1]" } @$hist ],
          [ '->pending', 'pending>claimed', 'claimed>done' ],
          'every status change left one history row');
is($hist->[1][2], 'worker:test', 'naming who made it');

like($sb->psql('UPDATE mt5credit.credit_history SET actor = $$x$$',
               may_fail => 1),
     qr/append-only/, 'history cannot be rewritten');
like($sb->psql('DELETE FROM mt5credit.credit_history', may_fail => 1),
     qr/append-only/, 'or deleted');
like($sb->psql('DELETE FROM mt5credit.mt5_credit', may_fail => 1),
     qr/append-only/, 'and no credit can be deleted');

# --- cases ----------------------------------------------------------------

$sb->psql(<<'SQL');
SELECT mt5credit.open_case('test_kind', 'low', 'k1', '{"a": 1}');
SELECT mt5credit.open_case('test_kind', 'low', 'k1', '{"b": 2}');
SQL
is($sb->sql1("SELECT count(*) || ' ' || (details->>'sightings') "
             . "FROM mt5credit.case WHERE dedupe_key = 'k1' "
             . "GROUP BY details"), '1 2',
   'the same finding twice is one case, seen twice');

# --- roles ----------------------------------------------------------------

my @tables = map { $_->[0] } @{ $sb->psql(
    "SELECT tablename FROM pg_tables WHERE schemaname = 'mt5credit'") };
ok(@tables >= 8, 'the schema has its tables (' . scalar(@tables) . ')');

for my $t (@tables) {
    my $q = $t eq 'case' ? 'mt5credit."case"' : "mt5credit.$t";
    like($sb->psql("SELECT 1 FROM $q LIMIT 1", user => 'edge',
                   may_fail => 1),
         qr/permission denied/, "the edge role cannot read $t");
    like($sb->psql("DELETE FROM $q", user => 'edge', may_fail => 1),
         qr/permission denied/, "the edge role cannot delete from $t");
}

like($sb->psql("UPDATE mt5credit.mt5_credit SET status = 'pending'",
               user => 'edge', may_fail => 1),
     qr/permission denied/, 'the edge role cannot UPDATE mt5_credit');
like($sb->psql("SELECT mt5credit.create_deposit('a','keykeykey','stripe',"
               . "'live1',1001,1,'USD')", user => 'edge', may_fail => 1),
     qr/permission denied/, 'the edge role cannot create deposits');
like($sb->psql("SELECT mt5credit.open_case('x_x','low','k','{}')",
               user => 'edge', may_fail => 1),
     qr/permission denied/, 'nor open cases directly');
like($sb->psql("SELECT * FROM mt5credit.ingest('stripe', NULL, "
               . "'\\x7b7d'::bytea, 'stripe', NULL)", user => 'edge', raw => 1),
     qr/malformed/, 'but it can call ingest()');
like($sb->psql("SELECT * FROM mt5credit.ingest('stripe', NULL, "
               . "'\\x7b7d'::bytea, 'stripe', NULL)", user => 'portal',
               may_fail => 1),
     qr/permission denied/, 'and the portal role cannot');

my $public = $sb->sql1(<<'SQL');
SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'mt5credit'
  AND has_function_privilege('public', p.oid, 'EXECUTE')
  AND p.prosecdef
SQL
is($public, 0, 'no SECURITY DEFINER function is executable by PUBLIC');

# deposit 1,000,000 must not get the reference of deposit 100,000
is(join(' ', map { $_->[0] } @{ $sb->psql(
       "INSERT INTO mt5credit.deposit (id, client_id, idempotency_key, "
       . "provider, mt5_server, mt5_login, amount_minor, currency, "
       . "account_currency, credit_amount_minor) OVERRIDING SYSTEM VALUE "
       . "VALUES (100000, 'alice', 'million-1', 'stripe', 'live1', 1001, "
       . "100, 'USD', 'USD', 100), (1000000, 'alice', 'million-2', "
       . "'stripe', 'live1', 1001, 100, 'USD', 'USD', 100) "
       . "RETURNING reference") }),
   'dep_100000 dep_1000000', 'deposit references stay unique past a million');

done_testing;
