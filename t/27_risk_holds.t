#!/usr/bin/perl
#
# Risk holds (sql/079, docs/risk.md): rules kept as data hold a deposit's
# credit for a person before MT5 is called.  Impossible:
#   - a credit that trips a rule reaching MT5 before two people release it
#     (the simulator sees no balance call for any held credit)
#   - a credit held without the rule and the figures that tripped it, or
#     under a rule it did not trip; a credit at the limit held
#   - a rule of another currency or another provider holding a credit
#   - one person changing a rule, releasing a hold, or returning one:
#     through the program, the function, or the tables
#   - a rule changed without its history (who proposed, who approved, what
#     it was before); why a credit was held rewritten afterwards
#   - two of a client's deposits judged at once each missing the other
#   - a released credit credited twice, a returned one credited at all
#   - a refused (returned) deposit counting towards a client's velocity

use strict;
use warnings;

use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;

my $db = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';

sub desk {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'cases', '--database',
                                  "$db user=$who", @args);
}

sub risk {
    my ($who, @args) = @_;
    return Mt5Credit::Worker::run($sb, 'risk', '--database',
                                  "$db user=$who", @args);
}

sub as {
    my ($who, $sql) = @_;
    return $sb->psql($sql, user => $who, may_fail => 1, raw => 1);
}

# a rule in force (or, $remove, gone): proposed by alice, approved by bob
sub rule {
    my ($rule, $currency, $provider, $limit, $remove) = @_;
    my $q = sub { defined $_[0] ? "'$_[0]'" : 'NULL' };
    my $id = $sb->sql1("SELECT mt5credit.risk_rule_propose('$rule', "
        . $q->($currency) . ', ' . $q->($provider) . ', ' . $q->($limit)
        . ', ' . ($remove ? 'true' : 'false') . ", 'test')",
        user => 'ops_alice');
    $sb->sql1("SELECT mt5credit.risk_rule_decide($id, 'approve', 'ok')",
              user => 'ops_bob');
    return $id;
}

sub unrule { rule(@_[0 .. 2], undef, 1) }

my $login = 70400;
sub client {
    my ($name, %a) = @_;
    my @logins;
    for (1 .. ($a{logins} || 1)) {
        push @logins, $st->account(login => ++$login, client => $name,
                                   ($a{group} ? (group => $a{group}) : ()));
    }
    return @logins;
}

# the rules a credit tripped, as the record says, sorted
sub held_for {
    my ($credit) = @_;
    return $sb->sql1("SELECT coalesce(string_agg(r->>'rule', ',' "
                     . "ORDER BY r->>'rule'), '') FROM mt5credit.mt5_credit, "
                     . "jsonb_array_elements(held_for) r WHERE id = $credit")
           // '';
}

sub trip {
    my ($credit, $rule, $field) = @_;
    return $sb->sql1("SELECT r->>'$field' FROM mt5credit.mt5_credit, "
                     . "jsonb_array_elements(held_for) r WHERE id = $credit "
                     . "AND r->>'rule' = '$rule'");
}

# --- the rules: data two people change ------------------------------------

my ($rc, $out);
my $prop = $sb->sql1("SELECT mt5credit.risk_rule_propose("
                     . "'credit_amount', 'USD', NULL, '1000.00', false, "
                     . "'cards over 1,000 USD: a person looks first')",
                     user => 'ops_alice');
ok($prop, 'alice proposes a rule: a credit over 1000.00 USD is held');
is($sb->sql1("SELECT count(*) FROM mt5credit.risk_rule"), 0,
   '... not in force before another person approves it');
like(as('ops_alice', "SELECT mt5credit.risk_rule_decide($prop, 'approve', "
        . "'me')"), qr/two-person rule/,
     'alice cannot approve her own rule change');
like(as('ops_alice', "INSERT INTO mt5credit.risk_rule (rule, currency, "
        . "limit_minor, change_id) VALUES ('credit_amount', 'USD', 1, "
        . "$prop)"), qr/permission denied/,
     '... nor write the rules table');
like(as('ops_alice', "UPDATE mt5credit.risk_rule_change SET status = "
        . "'approved', decided_by = 'ops_bob', decided_at = now() "
        . "WHERE id = $prop"), qr/permission denied/,
     '... nor the changes table');
like($sb->psql("UPDATE mt5credit.risk_rule_change SET status = 'approved', "
               . "decided_by = 'ops_alice', decided_at = now() "
               . "WHERE id = $prop", may_fail => 1),
     qr/risk_rule_change_four_eyes/,
     'even the owner cannot store a change approved by its proposer');
like($sb->psql("UPDATE mt5credit.risk_rule_change SET limit_minor = 1 "
               . "WHERE id = $prop", may_fail => 1),
     qr/cannot change after it was made/,
     'a proposed change cannot be altered under the approver');
$sb->sql1("SELECT mt5credit.risk_rule_decide($prop, 'approve', 'agreed')",
          user => 'ops_bob');
is($sb->sql1("SELECT rule || ' ' || currency || ' ' || limit_minor "
             . "FROM mt5credit.risk_rule"), 'credit_amount USD 100000',
   'bob approves: the rule is in force, in minor units, exactly');
like(as('ops_alice', "SELECT mt5credit.risk_rule_propose('credit_amount', "
        . "'USD', NULL, '1000.001', false, 'x')"),
     qr/whole minor units/, 'a limit of 1000.001 USD is refused, not rounded');
like(as('ops_alice', "SELECT mt5credit.risk_rule_propose('velocity', NULL, "
        . "NULL, '3', false, 'x')"), qr/no risk rule "velocity"/,
     'an unknown rule is refused by name');
like(as('ops_alice', "SELECT mt5credit.risk_rule_propose('login_count_24h', "
        . "NULL, NULL, '1.5', false, 'x')"), qr/needs a count like 3/,
     'a count that is not a whole number is refused');

rule('login_count_24h', undef, undef, '3');
rule('login_sum_24h', 'USD', undef, '2000.00');
rule('client_count_24h', undef, undef, '5');
rule('client_sum_24h', 'USD', undef, '3000.00');
rule('credit_amount', 'JPY', undef, '100000');
rule('credit_amount', 'USD', 'checkout', '10.00');

# the same through the program
($rc, $out) = risk('ops_alice', 'propose', 'first_provider', '--provider',
                   'adyen', '--note', 'new card rail: first deposits looked at');
is($rc, 0, 'mt5credit risk propose') or diag $out;
my ($pc) = $out =~ /rule change (\d+) proposed/;
($rc, $out) = risk('ops_alice', 'approve', $pc);
isnt($rc, 0, '... not approved by its proposer');
like($out, qr/two-person rule/, '... and told why');
($rc, $out) = risk('ops_bob', 'approve', $pc, '--note', 'agreed');
is($rc, 0, 'mt5credit risk approve, by another person') or diag $out;
($rc, $out) = risk('ops_alice', 'propose', 'login_sum_24h', '--limit', '10',
                   '--note', 'no currency');
isnt($rc, 0, 'an amount rule without a currency is refused');
($rc, $out) = risk('ops_alice', 'propose', 'login_sum_24h', '--note', 'x');
isnt($rc, 0, 'an amount rule without a limit is refused');
like($out, qr/needs an amount like 5000\.00/, '... saying what it needs');
($rc, $out) = risk('ops_alice', 'propose', 'first_deposit', '--note', '');
is($rc, 2, 'a change without a note is a usage error');
($rc, $out) = risk('ops_alice', 'rules');
like($out, qr/^first_provider\s+any\s+adyen\s+-\s+$pc\s+ops_alice\s+ops_bob/m,
     'mt5credit risk rules: the rule, who proposed and who approved it');
like($out, qr/^credit_amount\s+USD\s+any\s+1000\s/m,
     '... and the amount rule in major units');
($rc, $out) = risk('ops_bob', 'changes', '--limit', '3');
like($out, qr/^$pc\s+approved\s+first_provider/m,
     'mt5credit risk changes: the history, newest first');

# changed: 1000.00 -> 1500.00 and back, the history kept
my $ch = rule('credit_amount', 'USD', undef, '1500.00');
is($sb->sql1("SELECT (rule_before->>'limit_minor') || ' ' || proposed_by "
             . "|| ' ' || decided_by FROM mt5credit.risk_rule_change "
             . "WHERE id = $ch"), '100000 ops_alice ops_bob',
   'a changed rule keeps what it was, who proposed and who approved');
rule('credit_amount', 'USD', undef, '1000.00');
is($sb->sql1("SELECT count(*) FROM mt5credit.risk_rule_change "
             . "WHERE status = 'approved'"), 10,
   'every approved change is kept');
is($sb->sql1("SELECT limit_text FROM mt5credit.risk_rules() WHERE rule = "
             . "'credit_amount' AND currency = 'USD' AND provider IS NULL"),
   '1000', 'risk_rules() shows the limit in force in major units');

# --- planted scenarios: each held under its rule, with its figures --------

my @held;       # [credit, "rules", what]
my @clear;      # [credit, what]

sub expect {
    my ($credit, $rules, $what) = @_;
    if ($rules eq '') { push @clear, [ $credit, $what ] }
    else              { push @held, [ $credit, $rules, $what ] }
}

# amounts: over the limit held, at the limit not (cents)
for my $a (100001, 100100, 150000, 199999, 200000, 200001, 299999, 300001,
           999999, 2500000, 99999999)
{
    my ($l) = client("amt$a");
    my $rules = join(',', ($a > 300000 ? 'client_sum_24h' : ()),
                     'credit_amount', ($a > 200000 ? 'login_sum_24h' : ()));
    expect($st->pay(client => "amt$a", login => $l, amount => $a), $rules,
           "a credit of $a cents");
}
{
    my ($l) = client('amt_at');
    expect($st->pay(client => 'amt_at', login => $l, amount => 100000), '',
           'a credit of exactly 1000.00 USD (the limit passes)');
}

# a login's fourth deposit in a day, and its fifth
for my $n (1 .. 4) {
    my ($l) = client("cnt$n");
    expect($st->pay(client => "cnt$n", login => $l, amount => 100), '',
           "login's deposit 1 of client cnt$n") for 1 .. 3;
    expect($st->pay(client => "cnt$n", login => $l, amount => 100),
           'login_count_24h', "login's 4th deposit in 24 h (cnt$n)");
    expect($st->pay(client => "cnt$n", login => $l, amount => 100),
           'login_count_24h', "login's 5th deposit in 24 h (cnt$n)");
}

# a login's sum over 2000.00 USD in a day
for my $n (1 .. 5) {
    my ($l) = client("sum$n");
    expect($st->pay(client => "sum$n", login => $l, amount => 90000), '',
           "900.00 (sum$n)");
    expect($st->pay(client => "sum$n", login => $l, amount => 90000), '',
           "1800.00 (sum$n)");
    expect($st->pay(client => "sum$n", login => $l, amount => 20000 + $n),
           'login_sum_24h', "2000.0$n in a day on one login (sum$n)");
}

# a client's sixth deposit across two logins (three each: no login trips)
for my $n (1 .. 4) {
    my ($l1, $l2) = client("ccnt$n", logins => 2);
    expect($st->pay(client => "ccnt$n", login => $_, amount => 100), '',
           "client ccnt$n, one of five") for $l1, $l1, $l1, $l2, $l2;
    expect($st->pay(client => "ccnt$n", login => $l2, amount => 100),
           'client_count_24h', "client's 6th deposit over two logins "
           . "(ccnt$n)");
}

# a client's sum over 3000.00 USD across two logins
for my $n (1 .. 4) {
    my ($l1, $l2) = client("csum$n", logins => 2);
    expect($st->pay(client => "csum$n", login => $l1, amount => 90000), '',
           "csum$n 900") for 1 .. 2;
    expect($st->pay(client => "csum$n", login => $l2, amount => 90000), '',
           "csum$n 2700");
    expect($st->pay(client => "csum$n", login => $l2, amount => 40000),
           'client_sum_24h', "3100.00 over two logins in a day (csum$n)");
}

# JPY: its own rule, and the USD one does not apply
for my $a (100001, 250000, 5000000) {
    my ($l) = client("jpy$a", group => 'real\\jpy');
    expect($st->pay(client => "jpy$a", login => $l, amount => $a,
                    currency => 'JPY'),
           'credit_amount', "a credit of $a JPY (over 100000 JPY)");
}
{
    my ($l) = client('jpy_ok', group => 'real\\jpy');
    expect($st->pay(client => 'jpy_ok', login => $l, amount => 99999,
                    currency => 'JPY'), '',
           '99999 JPY: under its rule, and 1000.00 USD is not JPY\'s');
}
{
    my ($l) = client('other_provider');
    expect($st->pay(client => 'other_provider', login => $l, amount => 5000),
           '', '50.00 USD by Stripe: the 10.00 limit is Checkout\'s');
}

# several rules at once
for my $n (1 .. 3) {
    my ($l) = client("multi$n");
    expect($st->pay(client => "multi$n", login => $l, amount => 250000),
           'credit_amount,login_sum_24h', "2500.00 at once (multi$n)");
    expect($st->pay(client => "multi$n", login => $l, amount => 60000),
           'client_sum_24h,login_sum_24h',
           "then 600.00: 3100.00 in a day (multi$n)");
}

# --- judged ---------------------------------------------------------------

for my $h (@held) {
    my ($credit, $rules, $what) = @$h;
    ok($credit, "$what: a credit") or next;
    is($st->status_of($credit) . ' ' . held_for($credit), "held $rules",
       "$what: held under $rules");
}
for my $c (@clear) {
    my ($credit, $what) = @$c;
    is($st->status_of($credit) . ' ' . held_for($credit), 'pending ',
       "$what: not held");
}
cmp_ok(scalar @held, '>=', 40, scalar(@held) . ' planted holds');

# the evidence a person reads
my ($c4) = map { $_->[0] } grep { $_->[2] =~ /4th deposit in 24 h \(cnt1/ }
           @held;
is(trip($c4, 'login_count_24h', 'observed') . '/'
   . trip($c4, 'login_count_24h', 'limit_count'), '4/3',
   'the evidence: 4 deposits on the login in 24 hours, the limit 3');
my ($cs) = map { $_->[0] } grep { $_->[2] =~ /\(sum2\)/ } @held;
is(trip($cs, 'login_sum_24h', 'observed') . '/'
   . trip($cs, 'login_sum_24h', 'limit_minor') . '/'
   . trip($cs, 'login_sum_24h', 'count'), '200002/200000/3',
   'the evidence: 2000.02 in 3 deposits against 2000.00');
ok(trip($cs, 'login_sum_24h', 'since'), '... and the window it counted');
is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE kind = 'risk_hold' "
             . "AND status = 'open'"), scalar @held,
   'one open risk_hold case per held credit');
is($sb->sql1("SELECT details->'held_for' = c.held_for FROM mt5credit.case k "
             . "JOIN mt5credit.mt5_credit c ON c.id = k.credit_id "
             . "WHERE k.kind = 'risk_hold' AND c.id = $cs"), 't',
   '... carrying what tripped');
is(join(',', @{ $st->history_of($cs) }), '->pending,pending>held',
   'the history: born, then held, in one transaction');
like($sb->psql("UPDATE mt5credit.mt5_credit SET held_for = '[{}]' "
               . "WHERE id = $cs", may_fail => 1),
     qr/why it was held never changes/,
     'why a credit was held is never rewritten, not even by the owner');

# --- nothing held reaches MT5 ---------------------------------------------

my $conf = $st->worker_config('w1');
$sim->reset_stats;
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once') for 1 .. 3;
is(scalar(grep { $st->status_of($_->[0]) eq 'done' } @clear), scalar @clear,
   'the worker makes every credit that was not held');
is($sim->requests('/api/trade/balance') // 0, scalar @clear,
   '... and calls MT5 once for each of them, none for a held one');
is(scalar(grep { @{ $st->deals_of($_->[0]) } } @held), 0,
   'MT5 has no deal for any held credit');
is(scalar(grep { $st->status_of($_->[0]) ne 'held' } @held), 0,
   'every held credit is still held');

# --- metrics --------------------------------------------------------------

($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf,
                                     '--prometheus');
my $n_amount = grep { $_->[1] =~ /credit_amount/ } @held;
like($out, qr/^mt5credit_holds\{rule="credit_amount",status="held"\} $n_amount$/m,
     "status counts holds by rule ($n_amount under credit_amount)");
like($out, qr/^mt5credit_oldest_age_seconds\{status="held"\} [0-9.]+$/m,
     '... and the age of the oldest held credit, which the SLA alert reads');

# --- two people release, or return -----------------------------------------

my ($rel) = map { $_->[0] } grep { $_->[2] =~ /\(cnt2\)/ } @held;
my $case = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = $rel "
                     . "AND kind = 'risk_hold'");
($rc, $out) = desk('ops_alice', 'list', '--kind', 'risk_hold');
like($out, qr/^$case\s+\S+\s+medium\s+risk_hold\s+open\s.*dep:[0-9a-f]{18}$/m,
     'the desk lists the hold as a case, with its credit\'s reference');
($rc, $out) = desk('ops_alice', 'show', $case);
like($out, qr/"login_count_24h"/, '... and shows the rule that held it');

($rc, $out) = desk('ops_alice', 'propose', $case, '--action', 'release_hold',
                   '--note', 'the client called: top-ups for a contest');
is($rc, 0, 'alice proposes to release the hold') or diag $out;
my ($p) = $out =~ /proposal (\d+) made/;
($rc, $out) = desk('ops_alice', 'approve', $p);
isnt($rc, 0, 'alice cannot approve her own release');
like(as('ops_alice', "UPDATE mt5credit.mt5_credit SET status = 'pending' "
        . "WHERE id = $rel"), qr/permission denied/,
     '... nor move the credit herself');
is($st->status_of($rel), 'held', '... the credit is still held');
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is(scalar @{ $st->deals_of($rel) }, 0, '... and MT5 has still no deal');
($rc, $out) = desk('ops_bob', 'approve', $p, '--note', 'checked');
is($rc, 0, 'bob approves the release') or diag $out;
is($st->status_of($rel), 'pending', '... the credit is queued');
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is($st->status_of($rel), 'done', 'the worker makes it');
is(scalar @{ $st->deals_of($rel) }, 1, '... one deal');
($rc, $out) = desk('ops_bob', 'approve', $p);
isnt($rc, 0, 'a release is approved once');

my ($ret) = map { $_->[0] } grep { $_->[2] =~ /\(sum3\)/ } @held;
my $case2 = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = $ret "
                      . "AND kind = 'risk_hold'");
($rc, $out) = desk('ops_bob', 'propose', $case2, '--action', 'return_hold',
                   '--note', 'card of someone else: back to the source');
my ($p2) = $out =~ /proposal (\d+) made/;
($rc, $out) = desk('ops_alice', 'approve', $p2, '--note', 'agreed');
is($rc, 0, 'bob proposes to return a held credit, alice approves')
    or diag $out;
is($st->status_of($ret), 'failed', '... it is failed: never credited');
Mt5Credit::Worker::run($sb, 'work', '-c', $conf, '--once');
is(scalar @{ $st->deals_of($ret) }, 0, '... and MT5 never sees it');
# what the broker's CRM hears of it (sql/095): held as it was born, then
# returned, numbered in that order; never credited (its case is an event
# of its own, case:<id>)
is($sb->sql1("SELECT string_agg(m.type || '#' || m.seq, ',' ORDER BY m.seq) "
             . "FROM mt5credit.outbound_message m JOIN mt5credit.mt5_credit c "
             . "ON m.subject = 'deposit:' || c.deposit_id WHERE c.id = $ret"),
   'deposit.held#1,deposit.returned#2',
   '... the outbound events: deposit.held, then deposit.returned');
($rc, $out) = desk('ops_bob', 'propose', $case2, '--action', 'release_hold',
                   '--note', 'x');
like($out, qr/only a held credit is released or returned/,
     'a returned credit cannot be released after');

# a returned deposit does not count towards the day's sum: sum3's login
# has 1800.00 that counts, so 150.00 more passes
my $sum3_login = $sb->sql1("SELECT mt5_login FROM mt5credit.mt5_credit "
                           . "WHERE id = $ret");
my $after = $st->pay(client => 'sum3', login => $sum3_login, amount => 15000);
is($st->status_of($after) . ' ' . held_for($after), 'pending ',
   'a returned deposit does not count towards the login\'s day');

# --- first deposits -------------------------------------------------------

rule('first_deposit', undef, undef, undef);
my ($fl) = client('newcomer');
my $f1 = $st->pay(client => 'newcomer', login => $fl, amount => 1000);
is(held_for($f1), 'first_deposit', 'a client\'s first deposit is held');
my $f2 = $st->pay(client => 'newcomer', login => $fl, amount => 1000);
is(held_for($f2), 'first_deposit',
   '... and a second one made while the first waits');
my $old = $clear[0][0];
my $old_client = $sb->sql1("SELECT d.client_id FROM mt5credit.mt5_credit c "
    . "JOIN mt5credit.deposit d ON d.id = c.deposit_id WHERE c.id = $old");
my $old_login = $sb->sql1("SELECT mt5_login FROM mt5credit.mt5_credit "
                          . "WHERE id = $old");
my $f3 = $st->pay(client => $old_client, login => $old_login, amount => 1000);
is($st->status_of($f3), 'pending',
   'a client whose deposit was credited before is not held');
unrule('first_deposit', undef, undef);
my $f4 = $st->pay(client => 'newcomer', login => $fl, amount => 1000);
is($st->status_of($f4), 'pending', 'a removed rule holds nothing more');
is($sb->sql1("SELECT remove::text || ' ' || (rule_before->>'rule') FROM "
             . "mt5credit.risk_rule_change ORDER BY id DESC LIMIT 1"),
   'true first_deposit', '... and its removal is in the history');

# --- a client's deposits judged at once -------------------------------------

# two sessions ingest for the same client: the second waits for the
# first's decision, and counts it
rule('client_count_24h', undef, undef, '1');
my ($cl) = client('racer');
my @dep = map { $sb->create_deposit(client => 'racer', login => $cl,
                                    amount => 100, currency => 'USD') }
          1 .. 2;
my @s = map { $sb->psql_session } 1 .. 2;
for my $i (0, 1) {
    my $pi = "pi_race_$i";
    my $ev = Mt5Credit::Provider::stripe_event(deposit => $dep[$i],
                                               amount => 100,
                                               currency => 'USD', pi => $pi);
    $ev =~ s/'/''/g;
    $s[$i]->send("BEGIN; SELECT outcome FROM mt5credit.ingest('stripe', "
                 . "'evt_race_$i', convert_to('$ev', 'UTF8'), 'stripe', "
                 . "extract(epoch FROM now())::bigint);");
}
sleep 1;
$s[$_]->send('COMMIT;') for 0, 1;
$_->close for @s;
is($sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit c JOIN "
             . "mt5credit.deposit d ON d.id = c.deposit_id WHERE "
             . "d.client_id = 'racer' AND c.status = 'held'"), 1,
   'two deposits of one client at once: exactly one held, not none');

done_testing;
