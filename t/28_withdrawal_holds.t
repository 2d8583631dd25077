#!/usr/bin/perl
#
# Risk holds on withdrawals (sql/080, docs/risk.md): the rules of 079 hold
# a withdrawal for two people before anyone can prepare it, so before any
# MT5 debit or payout leg exists.  Impossible:
#   - a held withdrawal reaching MT5 (no debit "wd:" deal) before two people
#     release it; one returned by two people reaching it at all
#   - one person preparing, rejecting, amending out of, or releasing a held
#     withdrawal: through the program, the functions, or the tables
#   - a withdrawal over the limit passing, one at the limit held, a rule of
#     another provider holding it; an amend past the limit slipping through
#   - a withdrawal prepared before its login's trading since the last
#     deposit was read from MT5, or judged on no answer from MT5
#   - trades before the deposit, or on another login, counting as trading
#     since it; a trade MT5 dated an hour earlier (a DST step) after the
#     deposit not counting
#   - why a withdrawal was held rewritten, or the trading it was judged on
#   - the client told their withdrawal is under a compliance hold

use strict;
use warnings;

use Test::More;

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
my $conf = $st->worker_config('w1');

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';

sub desk {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'cases', '--database',
                                  "$db user=$who", @args);
}

sub as {
    my ($who, $sql) = @_;
    return $sb->psql($sql, user => $who, may_fail => 1, raw => 1);
}

sub rule {
    my ($rule, $currency, $provider, $limit) = @_;
    my $q = sub { defined $_[0] ? "'$_[0]'" : 'NULL' };
    my $id = $sb->sql1("SELECT mt5credit.risk_rule_propose('$rule', "
        . $q->($currency) . ', ' . $q->($provider) . ', ' . $q->($limit)
        . ", false, 'test')", user => 'ops_alice');
    $sb->sql1("SELECT mt5credit.risk_rule_decide($id, 'approve', 'ok')",
              user => 'ops_bob');
    return $id;
}

sub work { Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once') }

my $n = 0;
sub withdraw {
    my ($login, $amount, %o) = @_;
    $n++;
    return $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'hold-test-$n', '" . ($o{provider} || 'stripe')
        . "', 'live1', $login, $amount, 'USD', 'acct_dest_$n')",
        user => 'portal');
}

sub wd {
    my ($ref, $col) = @_;
    return $sb->sql1("SELECT $col FROM mt5credit.withdrawal "
                     . "WHERE reference = '$ref'") // '';
}

# the rules of every hold, in order: "rule,rule"
sub held_for {
    return $sb->sql1("SELECT coalesce(string_agg(r->>'rule', ',' ORDER BY n), "
        . "'') FROM mt5credit.withdrawal, jsonb_array_elements(held_for) "
        . "WITH ORDINALITY x (r, n) WHERE reference = '$_[0]'") // '';
}

sub trip {
    my ($ref, $field) = @_;
    return $sb->sql1("SELECT r->>'$field' FROM mt5credit.withdrawal, "
        . "jsonb_array_elements(held_for) r WHERE reference = '$ref' "
        . "ORDER BY (r->>'hold')::int DESC LIMIT 1");
}

sub prepare {
    my ($ref, $who) = @_;
    my $out = as($who || 'ops_alice',
                 "SELECT mt5credit.withdrawal_prepare('$ref', 'ok')");
    chomp $out;
    return $out;
}

sub debits_of {
    my $id = wd($_[0], 'id');
    return scalar grep { ($_->{Comment} // '') =~ /(?:^|:)wd:$id$/ }
           @{ $sim->ledger->{deals} };
}

sub case_of {
    my ($ref, $hold) = @_;
    my $id = wd($ref, 'id');
    return $sb->sql1("SELECT id FROM mt5credit.case WHERE dedupe_key = "
                     . "'withdrawal_hold:$id:" . ($hold || 1) . "'");
}

sub trade {
    my ($login, $volume, %o) = @_;
    return $sim->post('/control/trade', { login => $login, action => 0,
        volume => $volume, ($o{time} ? (time => $o{time}) : ()) })->{ticket};
}

# a login credited a deposit: returns its deal's ticket
my $next = 72800;
sub funded {
    my ($amount) = @_;
    my $login = $st->account(login => ++$next, balance => '0.00');
    my $credit = $st->pay(login => $login, amount => $amount // 200000);
    work();
    is($st->status_of($credit), 'done', "login $login: a deposit credited")
        or return;
    return ($login, $st->credit($credit)->{ticket});
}

# --- the rules ---------------------------------------------------------------

like(as('ops_alice', "SELECT mt5credit.risk_rule_propose("
        . "'withdrawal_trading', NULL, NULL, '0.00001', false, 'x')"),
     qr/at most 4 decimals/, 'a volume finer than MT5\'s is refused');
like(as('ops_alice', "SELECT mt5credit.risk_rule_propose("
        . "'withdrawal_amount', NULL, NULL, '1000.00', false, 'x')"),
     qr/currency/, 'an amount rule names its currency');
rule('withdrawal_amount', 'USD', undef, '1000.00');
rule('withdrawal_amount', 'USD', 'bank', '10.00');
rule('withdrawal_trading', undef, undef, '1');
is($sb->sql1("SELECT string_agg(rule || ' ' || coalesce(provider, '*') || ' '"
             . " || limit_text, '; ') FROM mt5credit.risk_rules() "
             . "WHERE rule LIKE 'withdrawal%'"),
   'withdrawal_amount * 1000; withdrawal_amount bank 10; '
   . 'withdrawal_trading * 1',
   'the rules in force, as typed: lots and major units');
is($sb->sql1("SELECT limit_volume FROM mt5credit.risk_rule "
             . "WHERE rule = 'withdrawal_trading'"), 10000,
   '... one lot stored in MT5\'s unit (1/10000 lot)');

# --- the amount ----------------------------------------------------------------

my $quiet = $st->account(login => ++$next, balance => '9000.00');
my $at = withdraw($quiet, 100000);
is(wd($at, 'status') . ' ' . held_for($at), 'requested ',
   'exactly 1000.00 USD passes (no deposit: no trading to read)');
my $over = withdraw($quiet, 100001);
is(wd($over, 'status') . ' ' . held_for($over),
   'held withdrawal_amount', '1000.01 USD is held');
is(trip($over, 'observed') . ' ' . trip($over, 'limit_minor'),
   '100001 100000', '... with the figures that tripped it');
ok(case_of($over), '... and a withdrawal_hold case for two people');
is(held_for(withdraw($quiet, 50000)), '',
   'a rule of another provider (bank: 10.00) holds no stripe withdrawal');

like(prepare($over), qr/not waiting to be prepared/,
     'a held withdrawal cannot be prepared');
like(as('ops_alice', "SELECT mt5credit.withdrawal_reject('$over', 'x')"),
     qr/not open/, '... nor rejected by one person');
like($sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$over', 100, "
               . "'acct_x')", user => 'portal', may_fail => 1),
     qr/no open withdrawal/, '... nor amended under the limit by the client');
like(as('ops_alice', "UPDATE mt5credit.withdrawal SET status = 'requested' "
        . "WHERE reference = '$over'"), qr/permission denied/,
     '... nor moved by an operator at the table');
like($sb->psql("UPDATE mt5credit.withdrawal SET held_for = '[{\"rule\": "
               . "\"none\"}]' WHERE reference = '$over'", may_fail => 1),
     qr/why it was held never changes/,
     'even the owner cannot rewrite why it was held');
like($sb->psql("UPDATE mt5credit.withdrawal SET status = 'requested', "
               . "held_for = NULL WHERE reference = '$over'", may_fail => 1),
     qr/why it was held never changes/, '... nor erase it');

my $grow = withdraw($quiet, 90000);
$sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$grow', 150000, "
          . "'acct_dest_x')", user => 'portal');
is(wd($grow, 'status') . ' ' . held_for($grow), 'held withdrawal_amount',
   'amended from 900.00 to 1500.00: held');
my $prep = withdraw($quiet, 20000);
like(prepare($prep), qr/^[0-9a-f]{32}$/, 'a prepared withdrawal ...');
$sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$prep', 200000, "
          . "'acct_dest_x')", user => 'portal');
is(wd($prep, 'status') . ' ' . wd($prep, "coalesce(prepared_by, '-')"),
   'held -', '... amended past the limit is held, its preparation void');

is($sb->sql1("SELECT mt5credit.withdrawal_progress('alice', '$over')",
             user => 'portal'), 'in_review',
   'the client sees "in review": a hold is not told (tipping off)');
is(join('|', @{ $sb->psql("SELECT status, coalesce(held_for::text, '-') "
    . "FROM mt5credit.withdrawal_request('alice', 'hold-test-tell', 'stripe', "
    . "'live1', $quiet, 100002, 'USD', 'acct_dest_t')",
    user => 'portal')->[0] }), 'requested|-',
   '... nor by what the portal\'s request returns');
is(wd('wd_' . sprintf('%06d', $sb->sql1("SELECT max(id) FROM "
          . "mt5credit.withdrawal")), 'status'), 'held',
   '... though the request is held');
my $tell = withdraw($quiet, 30000);
is(join('|', @{ $sb->psql("SELECT status, coalesce(held_for::text, '-') "
    . "FROM mt5credit.withdrawal_amend('alice', '$tell', 250000, "
    . "'acct_dest_z')", user => 'portal')->[0] }), 'requested|-',
   '... nor what an amend past the limit returns');

# two people release it
my $case = case_of($over);
my ($rc, $out) = desk('ops_alice', 'list', '--kind', 'withdrawal_hold');
like($out, qr/^$case\s.*withdrawal_hold/m, 'the desk lists the hold');
($rc, $out) = desk('ops_alice', 'show', $case);
like($out, qr/"withdrawal_amount"/, '... shows the rule that held it');
like($out, qr/"reference": "$over"/, '... and the withdrawal');
($rc, $out) = desk('ops_alice', 'propose', $case, '--action',
                   'requeue_credit', '--note', 'x');
like($out, qr/released or returned, nothing else/,
     'a withdrawal\'s hold is released or returned, nothing else');
($rc, $out) = desk('ops_alice', 'propose', $case, '--action', 'release_hold',
                   '--note', 'source of funds documented');
is($rc, 0, 'alice proposes to release it') or diag $out;
my ($p) = $out =~ /proposal (\d+) made/;
($rc, $out) = desk('ops_alice', 'approve', $p);
isnt($rc, 0, 'alice cannot approve her own release');
like($sb->psql("UPDATE mt5credit.money_proposal SET status = 'approved', "
               . "decided_by = proposed_by, decided_at = now() "
               . "WHERE id = $p", may_fail => 1), qr/money_proposal_four_eyes/,
     'even the owner cannot store it approved by its proposer');
is(wd($over, 'status'), 'held', '... still held');
($rc, $out) = desk('ops_bob', 'approve', $p, '--note', 'checked');
is($rc, 0, 'bob approves the release') or diag $out;
is(wd($over, 'status'), 'requested', '... asked again, for maker and checker');
my $digest = prepare($over);
like($digest, qr/^[0-9a-f]{32}$/, 'alice prepares it');
unlike(as('ops_bob', "SELECT mt5credit.withdrawal_approve('$over', "
          . "'$digest', 'ok')"), qr/ERROR/, 'bob approves it');
is(wd($over, 'status'), 'approved', '... approved');
work();
is(debits_of($over), 1, 'the worker debits it in MT5, once');

# amended past the limit again after a release: a second hold, its own case
$sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$grow', 90000, "
          . "'acct_dest_x')", user => 'portal', may_fail => 1);
my $again = withdraw($quiet, 40000);
$sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$again', 120000, "
          . "'acct_dest_x')", user => 'portal');
ok(case_of($again, 1), 'held once');

# a decision is for the hold its case was opened for
my $twice = withdraw($quiet, 120000);
my $c1 = case_of($twice, 1);
($rc, $out) = desk('ops_alice', 'resolve', $c1, '--resolution', 'accepted',
                   '--note', 'looks fine');
isnt($rc, 0, 'a hold\'s case cannot be resolved by one person while it holds');
like($out, qr/still held; two people release or return it first/,
     '... saying why');
($rc, $out) = desk('ops_alice', 'propose', $c1, '--action', 'release_hold',
                   '--note', 'ok');
my ($pt) = $out =~ /proposal (\d+) made/;
desk('ops_bob', 'approve', $pt, '--note', 'ok');
$sb->psql("SELECT mt5credit.withdrawal_amend('alice', '$twice', 130000, "
          . "'acct_dest_y')", user => 'portal');
is(wd($twice, 'status') . ' ' . held_for($twice),
   'held withdrawal_amount,withdrawal_amount',
   'released, then amended past the limit: held again, a second hold');
($rc, $out) = desk('ops_alice', 'propose', $c1, '--action', 'release_hold',
                   '--note', 'x');
like($out, qr/held again since/,
     'the first hold\'s case cannot release the second');
ok(case_of($twice, 2), '... which has its own case');

# two people return one
my $case2 = case_of($grow);
($rc, $out) = desk('ops_bob', 'propose', $case2, '--action', 'return_hold',
                   '--note', 'destination not the client\'s');
my ($p2) = $out =~ /proposal (\d+) made/;
($rc, $out) = desk('ops_alice', 'approve', $p2, '--note', 'agreed');
is($rc, 0, 'bob proposes to return one, alice approves') or diag $out;
is(wd($grow, 'status') . ' ' . wd($grow, 'decided_by'), 'rejected ops_alice',
   '... it is rejected, by the second person');
work();
is(debits_of($grow), 0, '... and MT5 never sees a debit for it');
# the broker's CRM is not told of a hold either (sql/095): no case of
# one, and the rejection reads as a request's
is($sb->sql1("SELECT count(*) FROM mt5credit.outbound_message "
             . "WHERE type = 'case.opened' AND body LIKE '%withdrawal_hold%'"),
   0, '... no outbound event tells of a withdrawal\'s hold');
is($sb->sql1("SELECT string_agg(m.type || ' from ' || (m.body::jsonb->'data'"
             . "->>'from_status'), ',') FROM mt5credit.outbound_message m "
             . "WHERE m.subject = 'withdrawal:' || (SELECT id FROM "
             . "mt5credit.withdrawal WHERE reference = '$grow')"),
   'withdrawal.rejected from requested',
   '... its rejection is sent as a request\'s, not a hold\'s');
($rc, $out) = desk('ops_bob', 'propose', $case2, '--action', 'release_hold',
                   '--note', 'x');
like($out, qr/only a held withdrawal is released or returned/,
     'a returned withdrawal cannot be released after');

# --- the trading since the last deposit -------------------------------------

my ($idle, $idle_deal) = funded();
my $w_idle = withdraw($idle, 10000);
is(wd($w_idle, 'status') . ' ' . (wd($w_idle, 'trading_after') ? 'noted' : '-'),
   'requested noted', 'a withdrawal after a deposit notes the deposit');
like(prepare($w_idle), qr/waits for the worker to read the login's trading/,
     '... and cannot be prepared before its trading is read');
like($sb->psql("UPDATE mt5credit.withdrawal SET status = 'prepared', "
               . "prepared_by = 'ops_alice', prepared_at = now(), "
               . "prepared_digest = md5('x') WHERE reference = '$w_idle'",
               may_fail => 1), qr/waits for the worker|withdrawal_trading_looked/,
     '... not even by the owner at the table');

# no answer from MT5 is no reading
$sim->fault(kind => 'partial_page', endpoint => '/api/deal/get_page');
work();
$sim->clear_faults;
is(wd($w_idle, 'status') . ' ' . wd($w_idle, "coalesce(trading::text, '-')"),
   'requested -', 'an incomplete deal list from MT5: nothing recorded');

work();
is(wd($w_idle, 'status') . ' ' . held_for($w_idle),
   'held withdrawal_trading', 'no trading since the deposit: held');
is(trip($w_idle, 'observed') . ' ' . trip($w_idle, 'deals') . ' '
   . trip($w_idle, 'after_deal'), "0 0 $idle_deal",
   '... with what MT5 showed, after the deposit\'s own deal');
like($sb->psql("UPDATE mt5credit.withdrawal SET trading = '{}' "
               . "WHERE reference = '$w_idle'", may_fail => 1),
     qr/the trading it was judged on never changes/,
     'the reading it was judged on cannot be rewritten');

my ($busy) = funded();
trade($busy, 5000);
trade($busy, 5000);
my $w_busy = withdraw($busy, 10000);
work();
is(wd($w_busy, 'status') . ' ' . held_for($w_busy)
   . ' ' . wd($w_busy, "trading->>'volume'"), 'requested  10000',
   'one lot traded since the deposit (two of 0.5): not held');
like(prepare($w_busy), qr/^[0-9a-f]{32}$/, '... and it can be prepared');
my $w_late = withdraw($busy, 10000);
my $late = $st->pay(login => $busy, amount => 50000);
work();
is($st->status_of($late) . ' ' . wd($w_late, "trading->>'volume'"),
   'done 10000', 'a deposit credited after a withdrawal was asked, whose '
   . 'trading since the one before passed ...');
like(prepare($w_late), qr/a deposit was credited to its login after it was asked/,
     '... cannot be prepared: no trading was read since that deposit');

my $before = $st->account(login => ++$next, balance => '0.00');
trade($before, 500000);
my $bc = $st->pay(login => $before, amount => 100000);
work();
trade($before, 2000);
my $w_before = withdraw($before, 10000);
work();
is(held_for($w_before) . ' ' . trip($w_before, 'observed'),
   'withdrawal_trading 2000',
   'fifty lots before the deposit and 0.2 after: held on the 0.2');

my ($other) = funded();
my ($twin) = funded();
trade($twin, 90000);
my $w_other = withdraw($other, 10000);
work();
is(held_for($w_other), 'withdrawal_trading',
   'trades on another login do not count');

my ($dst, $dst_deal) = funded();
my ($dep_deal) = grep { $_->{Deal} == $dst_deal } @{ $sim->ledger->{deals} };
trade($dst, 10000, time => $dep_deal->{Time} - 3600);
my $w_dst = withdraw($dst, 10000);
work();
is(wd($w_dst, 'status') . ' ' . wd($w_dst, "trading->>'volume'"),
   'requested 10000',
   'a trade after the deposit that MT5 dated an hour before it counts');

my $w_fresh = withdraw($st->account(login => ++$next, balance => '50.00'),
                       1000);
is(wd($w_fresh, "coalesce(trading_after::text, '-')") . ' '
   . wd($w_fresh, 'status'), '- requested',
   'a login with no deposit has no trading to read');

is(debits_of($w_idle) + debits_of($w_before) + debits_of($w_other), 0,
   'no held withdrawal was debited in MT5');

# --- waiting withdrawals take turns (085) -----------------------------------

# three waiting, two read a round: one that can never be read (its
# deposit's deal gone from MT5) does not keep the others from their turn
my @turn = map { withdraw($_, 10000) } map { (funded())[0] } 1 .. 3;
sub due {
    return join ',', map { $_->[0] } @{ $sb->psql("SELECT reference FROM "
        . "mt5credit.withdrawal_trading_due('{live1}', 2)",
        user => 'worker') };
}
is(due(), "$turn[0],$turn[1]", 'a round takes the two waiting longest');
is(due(), "$turn[2],$turn[0]",
   '... the next one the never tried first, then the longest since tried');
is(due(), "$turn[1],$turn[2]", '... and so on: each has its turn');
is($sb->sql1("SELECT string_agg(tries::text, ',' ORDER BY withdrawal_id) "
             . "FROM mt5credit.withdrawal_trading_try t JOIN "
             . "mt5credit.withdrawal w ON w.id = t.withdrawal_id "
             . "WHERE w.reference IN ('" . join("','", @turn) . "')"),
   '2,2,2', '... each tried twice in three rounds of two');
like($sb->psql("UPDATE mt5credit.withdrawal_trading_try SET tries = 1",
               user => 'worker', may_fail => 1, raw => 1),
     qr/permission denied/, 'the worker cannot rewrite the turns');
work();
is(join(',', map { held_for($_) } @turn),
   'withdrawal_trading,withdrawal_trading,withdrawal_trading',
   'the worker reads all three');

# --- metrics ---------------------------------------------------------------

($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf,
                                     '--prometheus');
like($out, qr/^mt5credit_withdrawal_holds\{rule="withdrawal_trading",status="held"\} 6$/m,
     'status counts withdrawal holds by rule');
like($out, qr/^mt5credit_withdrawal_oldest_age_seconds\{status="held"\} [0-9.]+$/m,
     '... and the age of the oldest held withdrawal');

done_testing;
