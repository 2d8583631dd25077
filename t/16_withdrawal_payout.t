#!/usr/bin/perl
#
# Withdrawals after approval, end to end: the MT5 debit "wd:<id>" through
# the worker's claim / call / resolve path on the MT5 simulator, then the
# payout through `mt5credit payout` to the Stripe double (t/stripesim/), on
# the stripe_connect rail: the client is a Stripe connected account (the
# bank-transfer rail is t/19).
# Impossible:
#   - money paid out before the MT5 debit is done, or without one (an
#     unknown debit is resolved first; a refused debit is never paid)
#   - a second debit for one withdrawal, or a debit of another amount or
#     login than the approved request
#   - a payout whose outcome is unknown being sent again before it was
#     looked up; a timed-out payout that was made being made twice
#   - a payout the provider never got being left unpaid (a complete
#     listing without it sends it again, under the same idempotency key)
#   - a provider's rejection after the debit passing unnoticed (a case),
#     or the money returned to MT5 by one person alone
#   - a payout with no answer being guessed at (it stays unknown, a case
#     after the configured lookups)
#   - the API key in any log
#   - a payout the provider settled without our debit, with another payout
#     id, or that our record calls rejected, passing reconciliation; or a
#     debit the provider never paid out
#   - another deployment's payout with our reference taken for ours (once
#     the database has a deployment tag, sql/036: the key and metadata
#     name it, and the lookup requires it)
#   - a payout paid and then returned by the bank staying "paid" (it is
#     watched for payout_paid_watch: the return is a rejection and a
#     critical case; after the watch it is left alone)

use strict;
use warnings;

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);

use POSIX qw(strftime);

use lib 't/lib';
use Mt5Credit::Settlement;
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $KEY = 'rk_test_payout_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 20);

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
$st->account(login => 71601, balance => '5000.00');
$st->account(login => 71602, balance => '10.00');

my $state = $sb->dir . '/stripe.json';
$sb->write_file('stripe.json', '{}');
my $port = Mt5Credit::Sandbox::free_port();
$sb->spawn('stripesim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl", $port,
           $state, $KEY);
Mt5Credit::Sandbox::wait_port($port, 'stripesim');

my $keyfile = $sb->write_file('stripe-api.key', "$KEY\n");
chmod 0600, $keyfile;
my %fast = (call_timeout => 1, lease => 8, settle_margin => 1);
my $conf = $st->worker_config('w1', %fast,
    provider_api_url => "http://127.0.0.1:$port",
    provider_api_key_file => $keyfile,
    payout_timeout => 1, payout_lease => 6, payout_margin => 0,
    payout_backoff => 1, payout_recheck => 1, payout_max_lookups => 2,
    # the client is a Stripe connected account (t/19 has the bank rail)
    payout_rail => 'stripe_connect');

my $json = JSON::PP->new->canonical;

sub faults {
    my (%f) = @_;
    $sb->write_file('stripe.json.faults', $json->encode(\%f));
}

sub provider {
    my $r = $sb->http('GET', '/control/payouts', port => $port);
    return $json->decode($r->{body});
}

sub payouts_of {
    my ($ref) = @_;
    return [ grep { ($_->{metadata}{mt5credit_reference} // '') eq $ref }
             @{ provider()->{payouts} } ];
}

sub posts_of { provider()->{posts}{"mt5credit-payout-$_[0]"} // 0 }

sub settle {
    my ($id, $status, $code) = @_;
    $sb->http('POST', '/control/payout', port => $port,
              body => $json->encode({ id => $id, status => $status,
                                      failure_code => $code }),
              headers => [ [ 'Content-Type', 'application/json' ] ]);
}

sub payout_round {
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'payout', '-c', $conf,
                                            '--once');
    diag($out) if $rc != 0;
    return $rc;
}

my $n = 0;

# a request, prepared by alice and approved by bob: returns (wd ref, id)
sub withdraw {
    my ($amount, %o) = @_;
    $n++;
    my $login = $o{login} || 71601;
    my $ref = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'payout-test-$n', 'stripe', 'live1', $login, $amount, "
        . "'USD', 'acct_dest_$n')", user => 'portal');
    my $digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$ref', "
                           . "'ok')", user => 'ops_alice');
    $sb->psql("SELECT mt5credit.withdrawal_approve('$ref', '$digest', "
              . "'checked')", user => 'ops_bob');
    my $id = $sb->sql1("SELECT id FROM mt5credit.withdrawal "
                       . "WHERE reference = '$ref'");
    return ($ref, $id);
}

sub debit_of {
    $sb->sql1("SELECT id FROM mt5credit.mt5_credit WHERE withdrawal_id = $_[0] "
              . "AND kind = 'withdrawal'")
}

sub payout {
    my ($wid) = @_;
    my $r = $sb->psql("SELECT status, attempts, coalesce(provider_payout_id, "
                      . "''), lookups FROM mt5credit.payout "
                      . "WHERE withdrawal_id = $wid");
    return undef unless @$r;
    return { status => $r->[0][0], attempts => $r->[0][1],
             po => $r->[0][2], lookups => $r->[0][3] };
}

sub progress {
    $sb->sql1("SELECT mt5credit.withdrawal_progress('alice', '$_[0]')",
              user => 'portal')
}

sub payout_history {
    my ($wid) = @_;
    return join ' ', map { "$_->[0]>$_->[1]" } @{ $sb->psql(
        "SELECT coalesce(h.from_status, '-'), h.to_status FROM "
        . "mt5credit.payout_history h JOIN mt5credit.payout p ON "
        . "p.id = h.payout_id WHERE p.withdrawal_id = $wid ORDER BY h.id") };
}

# --- the normal path ----------------------------------------------------------

my ($ref, $wid) = withdraw(25000);
my $debit = debit_of($wid);
ok($debit, 'approval creates the MT5 debit, in the same transaction');
is($st->credit($debit)->{reference}, "wd:$wid", "... referenced wd:$wid");
is(payout($wid), undef, '... and no payout before the debit is done');
is(progress($ref), 'processing', 'the client sees "processing"');
like($sb->psql("INSERT INTO mt5credit.mt5_credit (kind, direction, "
               . "withdrawal_id, provider, provider_payment_id, mt5_server, "
               . "mt5_login, amount_minor, currency, paid_amount_minor, "
               . "paid_currency) VALUES ('withdrawal', 'debit', $wid, "
               . "'stripe', 'x:$wid', 'live1', 71601, 99, 'USD', 99, 'USD')",
               may_fail => 1),
     qr/mt5_credit_one_per_withdrawal|withdrawal_terms_fkey/,
     'even the owner cannot add a second debit, or one of another amount');

is(payout_round(), 0, 'a payout round before the debit: runs');
is(posts_of($wid), 0, '... and sends nothing');

Mt5Credit::Worker::start($sb, 'w1', $conf);
ok($st->wait_status($debit, 'done'), 'the worker makes the debit: done');
my $deals = $st->deals_with("wd:$wid");
is(scalar @$deals, 1, 'exactly one MT5 deal carries wd:' . $wid);
is($deals->[0]{Profit}, '-250.00', '... a debit of USD 250.00 exactly');
is($deals->[0]{Login}, 71601, '... from the approved login');
is(payout($wid)->{status}, 'pending',
   'the done debit made the payout, pending');

is(payout_round(), 0, 'a payout round');
my $p = payout($wid);
is($p->{status}, 'accepted', 'the provider accepted it');
my $at = payouts_of($ref);
is(scalar @$at, 1, 'one payout at the provider carries our reference');
is($at->[0]{amount} . ' ' . $at->[0]{currency} . ' ' . $at->[0]{account},
   "25000 usd acct_dest_$n", '... for the approved amount and currency, on '
   . 'behalf of the connected account (Stripe-Account)');
is($p->{po}, $at->[0]{id}, "... and its id ($p->{po}) is recorded");
is(posts_of($wid), 1, 'sent once, with the idempotency key');
is(progress($ref), 'sent', 'the client sees "sent"');

settle($p->{po}, 'paid');
sleep 1.2;
payout_round();
is(payout($wid)->{status}, 'paid', 'the status check sees it paid');
is(progress($ref), 'paid', 'the client sees "paid"');
is(payout_history($wid), '->pending pending>sending sending>accepted '
   . 'accepted>paid', 'the payout history, step by step');
# what the broker's CRM hears (sql/095), in the order it happened
sub outbound_of {
    my ($w) = @_;
    return $sb->sql1("SELECT string_agg(type || '#' || seq, ',' ORDER BY seq)"
                     . " FROM mt5credit.outbound_message "
                     . "WHERE subject = 'withdrawal:$w'");
}
is(outbound_of($wid), 'withdrawal.approved#1,withdrawal.debited#2,'
   . 'withdrawal.paid#3', 'the outbound events: approved, debited, paid');
like($sb->sql1("SELECT body FROM mt5credit.outbound_message WHERE subject = "
               . "'withdrawal:$wid' AND type = 'withdrawal.paid'"),
     qr/"provider_payout_id": "\Q$p->{po}\E"/,
     '... paid naming the provider\'s payout');
payout_round();
is(posts_of($wid), 1, 'a paid payout is never sent again');

# --- the MT5 debit's outcome unknown: resolved before any payout --------------------

{
    $sim->fault(kind => 'hang_after', endpoint => '/api/trade/balance');
    my ($r2, $w2) = withdraw(1500);
    my $d2 = debit_of($w2);
    ok($st->wait_status($d2, 'unknown', 15),
       'MT5 times out after executing the debit: unknown');
    $sim->clear_faults;
    payout_round();
    is(payout($w2), undef, 'no payout while the debit is unknown');
    is(posts_of($w2), 0, '... nothing sent');
    ok($st->wait_status($d2, 'done', 30), 'the resolver finds the deal: done');
    is(scalar @{ $st->deals_with("wd:$w2") }, 1, '... one debit deal');
    payout_round();
    is(payout($w2)->{status}, 'accepted', 'then, and only then, the payout');
}

# --- the payout times out after the provider made it -------------------------------

{
    my ($r3, $w3) = withdraw(1700);
    ok($st->wait_status(debit_of($w3), 'done'), 'debit done');
    faults(payout_post => 'delay_after', payout_delay => 3);
    payout_round();
    is(payout($w3)->{status}, 'unknown', 'a payout timeout is unknown, '
       . 'not failed');
    faults();
    sleep 6.5;    # its lease ends
    payout_round();
    my $p3 = payout($w3);
    is($p3->{status}, 'accepted', 'the lookup finds it at the provider');
    is(posts_of($w3), 1, '... and it was not sent again');
    is(scalar @{ payouts_of($r3) }, 1, '... one payout in all');
    like(payout_history($w3), qr/sending>unknown unknown>accepted/,
         '... history: unknown, then found');
}

# --- the send never reached the provider ---------------------------------------------

{
    my ($r4, $w4) = withdraw(1900);
    ok($st->wait_status(debit_of($w4), 'done'), 'debit done');
    faults(payout_post => 'drop_before', payout_delay => 3);
    payout_round();
    is(payout($w4)->{status}, 'unknown', 'no answer: unknown');
    faults();
    sleep 6.5;
    payout_round();
    my $p4 = payout($w4);
    is($p4->{status}, 'accepted',
       'a complete listing without it: sent again and accepted');
    is($p4->{attempts}, 2, '... in exactly two attempts');
    is(scalar @{ payouts_of($r4) }, 1, '... one payout at the provider');
    like(payout_history($w4), qr/unknown>pending pending>sending/,
         '... history: absent, pending, sent');
}

# --- the provider declines, and the money goes back by two people ---------------------

{
    my ($r5, $w5) = withdraw(2100);
    my $d5 = debit_of($w5);
    ok($st->wait_status($d5, 'done'), 'debit done');
    faults(payout_post => 'decline');
    payout_round();
    faults();
    is(payout($w5)->{status}, 'rejected', 'a declined payout is rejected');
    my $case = $sb->psql("SELECT id, kind, severity, amount_minor FROM "
                         . "mt5credit.case WHERE credit_id = $d5");
    is(join(' ', @{ $case->[0] }[1 .. 3]), 'payout_rejected critical 2100',
       '... a critical case on the debit, for the amount');
    is(progress($r5), 'under_review', 'the client sees "under review"');
    payout_round();
    is(posts_of($w5), 1, 'a rejected payout is never sent again by itself');
    is(scalar @{ $st->deals_with("wd:$w5") }, 1, 'the MT5 debit stands');

    my $cid = $case->[0][0];
    my $prop = $sb->sql1("SELECT mt5credit.case_propose($cid, "
        . "'correcting_credit', $d5, '21.00', 'payout declined: return it', "
        . "'[\"po declined\"]')", user => 'ops_alice');
    like($sb->psql("SELECT mt5credit.case_decide($prop, 'approve', 'ok')",
                   user => 'ops_alice', may_fail => 1, raw => 1),
         qr/two-person rule/, 'the proposer cannot approve the return');
    my $cor = $sb->sql1("SELECT mt5credit.case_decide($prop, 'approve', "
                        . "'checked')", user => 'ops_bob');
    is($sb->sql1("SELECT withdrawal_id || ' ' || kind || ' ' || direction "
                 . "FROM mt5credit.mt5_credit WHERE id = $cor"),
       "$w5 correction credit",
       'another person approves: a correcting credit of this withdrawal');
    ok($st->wait_status($cor, 'done'), 'the worker makes it');
    my $back = $st->deals_with("cor:$cor");
    is(scalar @$back, 1, '... one deal gives the money back');
    is($back->[0]{Profit}, '21.00', '... USD 21.00');
}

# --- the provider fails a payout after accepting it -----------------------------------

{
    my ($r6, $w6) = withdraw(2300);
    ok($st->wait_status(debit_of($w6), 'done'), 'debit done');
    payout_round();
    my $p6 = payout($w6);
    is($p6->{status}, 'accepted', 'accepted');
    settle($p6->{po}, 'failed', 'account_closed');
    sleep 1.2;
    payout_round();
    is(payout($w6)->{status}, 'rejected', 'failed later: rejected');
    is($sb->sql1("SELECT details->>'failure_code' FROM mt5credit.case "
                 . "WHERE kind = 'payout_rejected' AND credit_id = "
                 . debit_of($w6)), 'account_closed',
       '... a case naming the provider\'s reason');
}

# --- no answer is not "not there" -------------------------------------------------

{
    my ($r7, $w7) = withdraw(2500);
    ok($st->wait_status(debit_of($w7), 'done'), 'debit done');
    faults(payout_post => 'http500_after');
    payout_round();
    is(payout($w7)->{status}, 'unknown', 'an HTTP 500 is unknown');
    faults(payout_list => 'http500');
    sleep 6.5;
    payout_round();
    is(payout($w7)->{status}, 'unknown',
       'a failed listing changes nothing: still unknown');
    faults(payout_list => 'more_lie');
    sleep 2.2;
    payout_round();
    my $p7 = payout($w7);
    is($p7->{status} . ' ' . $p7->{lookups}, 'unknown 2',
       'an empty page claiming more is no answer either');
    is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE kind = "
                 . "'payout_no_answer' AND credit_id = " . debit_of($w7)), 1,
       'after payout_max_lookups a person is told');
    is(posts_of($w7), 1, 'and nothing was sent again');
    faults();
    sleep 4.5;
    payout_round();
    is(payout($w7)->{status}, 'accepted', 'once the provider answers: found');
    is(scalar @{ payouts_of($r7) }, 1, '... one payout');
}

# --- MT5 refuses the debit: nothing is paid ---------------------------------------

{
    my ($r8, $w8) = withdraw(500000, login => 71602);
    my $d8 = debit_of($w8);
    ok($st->wait_status($d8, 'failed'),
       'a debit larger than the balance fails before any call');
    is_deeply($st->cases_of($d8), [ 'insufficient_funds' ], '... a case');
    payout_round();
    is(payout($w8), undef, 'no payout');
    is(progress($r8), 'declined', 'the client sees "declined"');
}

$st->stop_worker('w1');

# --- monitoring sees the payouts, and how long credits take ----------------------

{
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--database',
        'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit user=worker',
        '--prometheus');
    is($rc, 0, 'mt5credit status --prometheus');
    my %by = map { $_->[0] => $_->[1] } @{ $sb->psql(
        "SELECT status, count(*) FROM mt5credit.payout GROUP BY 1") };
    like($out, qr/^mt5credit_payouts\{status="rejected"\} $by{rejected}$/m,
         "payouts by status ($by{rejected} rejected)");
    like($out, qr/^# TYPE mt5credit_credit_latency_seconds histogram$/m,
         'a latency histogram');
    my @b = $out =~ /^mt5credit_credit_latency_seconds_bucket\{le="[^"]+"\} (\d+)$/mg;
    my ($count) = $out =~ /^mt5credit_credit_latency_seconds_count (\d+)$/m;
    my $done = $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
                         . "WHERE status = 'done'");
    is($count, $done, "... counting the $done credits made this hour");
    is(scalar(@b), 12, '... in 12 buckets');
    ok(!grep({ $b[$_] < $b[$_ - 1] } 1 .. $#b) && $b[-1] == $count,
       '... cumulative, the last (+Inf) equal to the count');
}

# --- reconciliation: settlement payouts x withdrawals x MT5 debit deals -------------

{
    my %po = map { $_->[0] => $_->[1] } @{ $sb->psql(
        "SELECT w.reference, coalesce(p.provider_payout_id, '') FROM "
        . "mt5credit.withdrawal w JOIN mt5credit.payout p ON "
        . "p.withdrawal_id = w.id") };
    my %wd = map { $_->[0] => $_->[1] } @{ $sb->psql(
        "SELECT amount_minor, reference FROM mt5credit.withdrawal") };
    my $at = strftime('%Y-%m-%dT%H:%M:%SZ', gmtime);
    my ($sum, $n, $csv) = (0, 0, '');
    for my $r ([ 25000, 'ok' ], [ 1500, 'wrong_id' ], [ 1700, 'ok' ],
               [ 2100, 'declined_here' ], [ 2500, 'ok' ],
               [ 777, 'no_debit' ]) {
        my ($amount, $how) = @$r;
        my $ref = $how eq 'no_debit' ? 'wd_999999' : $wd{$amount};
        my $id = $how eq 'wrong_id' ? 'po_not_ours'
               : $how eq 'no_debit' ? 'po_stray'
               : $how eq 'declined_here' ? 'po_paid_after_all' : $po{$ref};
        $csv .= "g_wd_$amount,withdrawal,,$id,USD,-"
              . Mt5Credit::Settlement::major($amount) . ",0.00,$at,po_batch,"
              . "$ref\n";
        $sum -= $amount;
        $n++;
    }
    my $file = $sb->write_file('payouts.csv', "id,type,payment_id,movement_id,"
        . "currency,amount,fee,created_at,payout_id,withdrawal_reference\n"
        . $csv);
    my $control = $sb->write_file('payouts-control.csv', "payout_id,currency,"
        . "amount,count\npo_batch,USD," . Mt5Credit::Settlement::major($sum)
        . ",$n\n");
    my $rconf = Mt5Credit::Worker::config($sb, 'recon',
        servers => [ [ 'live1', $sim, recon_groups => 'real\\usd' ] ],
        recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                          . ' dbname=mt5credit user=recon"',
        recon_out => $sb->dir, call_timeout => 3, lease => 20,
        # the day alone: a payout not in the file is a break today
        recon_match_window => 0);
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $rconf,
        '--provider', 'stripe', '--day', strftime('%Y-%m-%d', gmtime),
        '--tz', 'UTC', '--currency', 'USD', '--format', 'generic',
        '--settlement', $file, '--control', $control);
    is($rc, 1, 'reconciliation of the payouts finds breaks (exit 1)')
        or diag $out;
    my ($run) = $out =~ /^run (\d+):/m;
    my %kinds = map { $_->[0] => $_->[1] } @{ $sb->psql(
        "SELECT kind || ':' || string_agg(coalesce(credit->>'reference', "
        . "settlement->>'provider_key'), ',' ORDER BY item_key), count(*) "
        . "FROM mt5credit.recon_item WHERE run_id = " . ($run // 0)
        . " GROUP BY kind") };
    my $w = sub { my $a = shift; "wd:" . ($wd{$a} =~ s/^wd_0*//r) };
    is_deeply([ sort keys %kinds ], [ sort
        'payout_id_mismatch:' . $w->(1500),
        'payout_state_mismatch:' . $w->(2100),
        'settled_not_debited:payout:wd_999999',
        'debited_not_settled:' . join(',', sort $w->(1900), $w->(2300)) ],
        'exactly the planted payout breaks, by kind and withdrawal')
        or diag explain \%kinds;
    is($sb->sql1("SELECT n FROM mt5credit.recon_count WHERE run_id = "
                 . ($run // 0) . " AND dimension = 'matched' "
                 . "AND name = 'withdrawal'"), 3,
       'the three payouts that agree on all three sides are matched');
    is($sb->sql1("SELECT credit->>'payout_status' FROM mt5credit.recon_item "
                 . "WHERE run_id = " . ($run // 0) . " AND kind = "
                 . "'payout_state_mismatch'"), 'rejected',
       'an item shows our payout record beside the settlement row and deal');
    is($sb->sql1("SELECT severity FROM mt5credit.case WHERE kind = "
                 . "'payout_id_mismatch'"), 'critical',
       'a payout id that is not the provider\'s own answer is critical');
}

# --- paid, then returned by the bank: watched, a case (034) ---------------------------

{
    my $watch = $sb->sql1("SELECT watch_until > now() + interval '13 days' "
                          . "FROM mt5credit.payout WHERE withdrawal_id = $wid");
    is($watch, 't', 'a paid payout is watched (payout_paid_watch, 14 days)');
    sleep 1.2;
    payout_round();
    is(payout($wid)->{status}, 'paid', '... asked again, still paid');
    settle($p->{po}, 'failed', 'account_closed');
    sleep 1.2;
    payout_round();
    is(payout($wid)->{status}, 'rejected',
       'the bank returns it days later: rejected');
    is(payout_history($wid), '->pending pending>sending sending>accepted '
       . 'accepted>paid paid>rejected', '... paid>rejected in its history');
    is($sb->sql1("SELECT severity || ' ' || status FROM mt5credit.case "
                 . "WHERE kind = 'payout_rejected' AND credit_id = "
                 . debit_of($wid)), 'critical open',
       '... a critical payout_rejected case on the debit');
    isnt(progress($ref), 'paid', '... and the client is no longer told "paid"');
    like(outbound_of($wid), qr/withdrawal\.paid#3,withdrawal\.failed#4$/,
         '... the outbound events: paid, then failed');
    is(posts_of($wid), 1, '... and nothing is sent again by itself');

    # past its watch, a paid payout is not asked about any more
    Mt5Credit::Worker::start($sb, 'w1', $conf);
    my ($r3, $w3) = withdraw(700);
    ok($st->wait_status(debit_of($w3), 'done', 20), 'another debit done');
    payout_round();
    settle(payout($w3)->{po}, 'paid');
    sleep 1.2;
    payout_round();
    is(payout($w3)->{status}, 'paid', 'another payout paid');
    $sb->psql("SET mt5credit.actor = 'test'; UPDATE mt5credit.payout SET "
              . "watch_until = now(), next_check_at = now() "
              . "WHERE withdrawal_id = $w3");
    settle(payout($w3)->{po}, 'failed', 'account_closed');
    sleep 1.2;
    payout_round();
    is(payout($w3)->{status}, 'rejected', '... the last look, at the end of '
       . 'the watch, still sees a return');
    my ($r4, $w4) = withdraw(800);
    ok($st->wait_status(debit_of($w4), 'done', 20), 'a third debit done');
    payout_round();
    settle(payout($w4)->{po}, 'paid');
    sleep 1.2;
    payout_round();
    $sb->psql("UPDATE mt5credit.payout SET watch_until = now(), "
              . "next_check_at = now() WHERE withdrawal_id = $w4");
    sleep 1.2;
    payout_round();
    is($sb->sql1("SELECT next_check_at IS NULL FROM mt5credit.payout "
                 . "WHERE withdrawal_id = $w4"), 't',
       '... and after it, paid is left alone');
    settle(payout($w4)->{po}, 'failed', 'account_closed');
    sleep 1.2;
    payout_round();
    is(payout($w4)->{status}, 'paid', '... (not asked again)');
    $st->stop_worker('w1');
}

# --- another deployment's payout with our reference (036) ----------------------------

{
    $sb->psql("INSERT INTO mt5credit.deployment (tag) VALUES ('prod')");
    my $tconf = $st->worker_config('wt', %fast,
        provider_api_url => "http://127.0.0.1:$port",
        provider_api_key_file => $keyfile, deployment_tag => 'prod',
        payout_timeout => 1, payout_lease => 6, payout_margin => 0,
        payout_backoff => 1, payout_recheck => 1, payout_max_lookups => 2,
        payout_rail => 'stripe_connect');
    Mt5Credit::Worker::start($sb, 'wt', $tconf);
    my ($r9, $w9) = withdraw(900);
    ok($st->wait_status(debit_of($w9), 'done', 20),
       'tagged database: a debit done');

    # staging's withdrawal with the same number paid out through the same
    # account, under our reference
    my $r = $sb->http('POST', '/v1/payouts', port => $port,
        body => "amount=900&currency=usd"
              . "&metadata%5Bmt5credit_reference%5D=$r9"
              . "&metadata%5Bmt5credit_deployment%5D=stg",
        headers => [ [ 'Authorization', "Bearer $KEY" ],
                     [ 'Stripe-Account', "acct_dest_$n" ],
                     [ 'Content-Type', 'application/x-www-form-urlencoded' ],
                     [ 'Idempotency-Key', "mt5credit-stg-payout-$w9" ] ]);
    my ($stg) = $r->{body} =~ /"id"\s*:\s*"(po_[A-Za-z0-9_]+)"/;
    ok($stg, "(staging paid out $r9 as $stg)");

    faults(payout_post => 'drop_before', payout_delay => 3);
    my ($rc) = Mt5Credit::Worker::run($sb, 'payout', '-c', $tconf, '--once');
    is(payout($w9)->{status}, 'unknown', 'our send got no answer: unknown');
    faults();
    sleep 6.5;
    Mt5Credit::Worker::run($sb, 'payout', '-c', $tconf, '--once');
    my $p9 = payout($w9);
    is($p9->{status}, 'accepted',
       'the listing has staging\'s payout only: sent again, accepted');
    isnt($p9->{po}, $stg, '... never taken for staging\'s payout');
    my @ours = grep { ($_->{metadata}{mt5credit_deployment} // '') eq 'prod' }
               @{ payouts_of($r9) };
    is(scalar @ours, 1, '... one payout of ours at the provider, tagged prod');
    is(posts_of($w9), 0, '... (no POST under the untagged key)');
    is(provider()->{posts}{"mt5credit-prod-payout-$w9"}, 2,
       '... both attempts under the tagged key');

    my ($brc, $bout) = Mt5Credit::Worker::run($sb, 'payout', '-c', $conf,
                                              '--once');
    is($brc, 1, 'a payout sender configured without the tag stops');
    like($bout, qr/the database is deployment "prod"/, '... saying why');
    $st->stop_worker('wt');
}

my $logs = join '', map { Mt5Credit::Worker::log_of($sb, $_) } qw(w1);
my ($rc, $out) = Mt5Credit::Worker::run($sb, 'payout', '-c', $conf, '--once');
unlike($logs . $out, qr/\Q$KEY\E/, 'the API key is in no log');

done_testing;
