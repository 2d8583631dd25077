#!/usr/bin/perl
#
# Withdrawals back the way the money came (sql/043_refund_legs.sql): the
# MT5 debit first, then each refund leg sent to its payment through
# `mt5credit payout` and the Stripe double (POST /v1/refunds), and a payout
# for the rest.  Impossible:
#   - a leg other than the approved plan's, or one sent before the MT5
#     debit is done; anything sent when MT5 refused the debit
#   - a refund whose outcome is unknown being sent again before it was
#     looked up; one that was made being made twice
#   - a refund the provider never got being left undone (a complete list
#     of the payment's refunds without it sends it again, same key)
#   - a declined refund, or one that fails later, passing unnoticed (a
#     critical case), or its money returned to MT5 by one person alone
#   - our own refunds' webhooks (charge.refunded listed or cumulative,
#     refund.created/updated/failed; duplicated, out of order, while the
#     leg is still unknown) debiting MT5 a second time
#   - a client's own refund after a leg debiting the leg's amount too
#   - the client told "paid" before every leg has arrived, or a failed
#     leg missing from `mt5credit status`
#   - a leg's settlement row taken for a refund without a debit, or paired
#     with a client's own refund; a leg settled for another amount, or
#     while we hold it failed; a debit whose legs did not all settle
#     passing reconciliation

use strict;
use warnings;

use JSON::PP;
use Test::More;
use POSIX qw(strftime);
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Settlement;
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $KEY = 'rk_test_refund_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 20);

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
my $sim = $st->sim;
$st->account(login => 71801, balance => '0.00');
$st->account(login => 71802, balance => '500.00');
$st->account(login => 71803, balance => '0.00');
$st->account(login => 71804, balance => '0.00');

my $json = JSON::PP->new->canonical;
my %payments;                  # the double's view of each PaymentIntent
my $state = $sb->dir . '/stripe.json';
$sb->write_file('stripe.json', '{}');
my $port = Mt5Credit::Sandbox::free_port();
$sb->spawn('stripesim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl", $port,
           $state, $KEY);
Mt5Credit::Sandbox::wait_port($port, 'stripesim');

my $keyfile = $sb->write_file('stripe-api.key', "$KEY\n");
chmod 0600, $keyfile;
my $conf = $st->worker_config('w1', call_timeout => 1, lease => 8,
    settle_margin => 1,
    provider_api_url => "http://127.0.0.1:$port",
    provider_api_key_file => $keyfile,
    payout_timeout => 1, payout_lease => 6, payout_margin => 0,
    payout_backoff => 1, payout_recheck => 1, payout_max_lookups => 2,
    payout_paid_watch => 3,
    # the payout legs: Stripe payouts to connected accounts (the bank
    # rail is t/19's)
    payout_rail => 'stripe_connect');
Mt5Credit::Worker::start($sb, 'w1', $conf);

sub faults { $sb->write_file('stripe.json.faults', $json->encode({ @_ })) }

sub book {
    return $json->decode($sb->http('GET', '/control/payouts',
                                   port => $port)->{body});
}

sub refunds_at { [ grep { $_->{payment_intent} eq $_[0] }
                   @{ book()->{refunds} || [] } ] }

sub posts { book()->{posts}{ $_[0] } // 0 }

my $said = '';                  # everything the sender printed

sub send_round {
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'payout', '-c', $conf,
                                            '--once');
    $said .= $out;
    diag($out) if $rc != 0;
    return $rc;
}

my $seq = 0;
my %wd;                        # the withdrawals, for reconciliation

# a deposit paid through the edge and credited by the worker
sub deposit {
    my ($login, $amount) = @_;
    my $pi = 'pi_rfd_' . $$ . '_' . ++$seq;
    $payments{$pi} = { currency => 'usd', amount => $amount };
    $sb->write_file('stripe.json', $json->encode(\%payments));
    my $c = $st->pay(login => $login, amount => $amount, pi => $pi);
    ok($st->wait_status($c, 'done'), "deposit $amount on $login credited");
    sleep 0.01;
    return { credit => $c, pi => $pi };
}

# prepared by one person, approved by another: (reference, id)
sub withdraw {
    my ($login, $amount) = @_;
    $seq++;
    my $ref = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'refund-test-$seq', 'stripe', 'live1', $login, $amount, "
        . "'USD', 'acct_rfd_$seq')", user => 'portal');
    my $digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$ref', "
                           . "'ok')", user => 'ops_alice');
    $sb->psql("SELECT mt5credit.withdrawal_approve('$ref', '$digest', "
              . "'checked')", user => 'ops_bob');
    my $id = $sb->sql1("SELECT id FROM mt5credit.withdrawal "
                       . "WHERE reference = '$ref'");
    return ($ref, $id);
}

sub debit_of {
    $sb->sql1("SELECT id FROM mt5credit.mt5_credit WHERE withdrawal_id = "
              . "$_[0] AND kind = 'withdrawal'")
}

# "leg:status:amount" of each refund row, in leg order
sub legs {
    my ($wid) = @_;
    return join ' ', map { join ':', @$_ } @{ $sb->psql(
        "SELECT leg, status, amount_minor FROM mt5credit.withdrawal_refund "
        . "WHERE withdrawal_id = $wid ORDER BY leg") };
}

sub leg_row {
    my ($wid, $leg) = @_;
    my $r = $sb->psql("SELECT status, attempts, coalesce(provider_refund_id, "
                      . "''), idempotency_key, reference FROM "
                      . "mt5credit.withdrawal_refund WHERE withdrawal_id = "
                      . "$wid AND leg = $leg");
    return { status => $r->[0][0], attempts => $r->[0][1],
             re => $r->[0][2], key => $r->[0][3], ref => $r->[0][4] };
}

sub progress {
    $sb->sql1("SELECT mt5credit.withdrawal_progress('alice', '$_[0]')",
              user => 'portal')
}

sub progress_legs {
    join ', ', map { "$_->[0] $_->[1] $_->[2] $_->[3]" } @{ $sb->psql(
        "SELECT kind, progress, amount_minor, currency FROM "
        . "mt5credit.withdrawal_progress_legs('alice', '$_[0]')",
        user => 'portal') };
}

sub refund_credits {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE kind = "
              . "'refund' AND original_credit_id IN ($_[0])")
}

# a signed webhook through the edge: "HTTP-status disposition"
sub hook {
    my (%e) = @_;
    my $res = $st->webhook(stripe_event(%e));
    my ($ev) = $res->{body} =~ /"event":(\d+)/;
    return "$res->{status} " . ($ev ? $sb->sql1("SELECT disposition FROM "
        . "mt5credit.webhook_event WHERE id = $ev") : '?');
}

# send rounds until the leg is in the state wanted (a lease must pass
# before an unknown refund is looked up), at most 15 s
sub rounds_until {
    my ($wid, $leg, $want) = @_;
    return Mt5Credit::Worker::wait_for(sub {
        send_round();
        leg_row($wid, $leg)->{status} eq $want }, 15);
}

sub wait_debit {
    my ($wid) = @_;
    my $d = debit_of($wid);
    ok($st->wait_status($d, 'done'), "the MT5 debit wd:$wid is done");
    return $d;
}

# --- 300 against 100 (older) and 250 (newer): 250 + 50, no payout ------------

my $old = deposit(71801, 10000);
my $new = deposit(71801, 25000);
# the older payment was made with another card
@{ $payments{ $old->{pi} } }{qw(brand last4)} = ('mastercard', '5555');
$sb->write_file('stripe.json', $json->encode(\%payments));
my ($r1, $w1) = withdraw(71801, 30000);
is(progress_legs($r1), 'refund processing 25000 USD, refund processing 5000 '
   . 'USD', 'the client sees the two legs of the approved plan');
my $d1 = wait_debit($w1);
my $deals = $st->deals_with("wd:$w1");
is(scalar @$deals, 1, 'one MT5 deal carries wd:' . $w1);
is($deals->[0]{Profit}, '-300.00', '... a debit of USD 300.00, the sum of '
   . 'the legs');
is(legs($w1), '1:pending:25000 2:pending:5000',
   'the done debit made a refund row per leg, pending');
is($sb->sql1("SELECT count(*) FROM mt5credit.payout WHERE withdrawal_id = "
             . "$w1"), 0, '... and no payout, since refunds cover it all');

is(send_round(), 0, 'a send round');
is(legs($w1), '1:succeeded:25000 2:succeeded:5000', 'both legs succeeded');
my $at_new = refunds_at($new->{pi});
my $at_old = refunds_at($old->{pi});
is(scalar(@$at_new) . ' ' . scalar(@$at_old), '1 1',
   'one refund on each payment at the provider');
is($at_new->[0]{amount} . ' ' . $at_old->[0]{amount}, '25000 5000',
   '... 250.00 to the newer deposit, 50.00 to the older');
my $l1 = leg_row($w1, 1);
is($at_new->[0]{metadata}{mt5credit_withdrawal} . ' '
   . $at_new->[0]{metadata}{mt5credit_refund}, "$r1 $l1->{ref}",
   '... carrying our withdrawal and leg references');
is($l1->{re}, $at_new->[0]{id}, "... and the provider's id is recorded");
is(posts($l1->{key}) . ' ' . posts(leg_row($w1, 2)->{key}), '1 1',
   'each leg POSTed once, under its own key');
like($l1->{key}, qr/^mt5credit-refund-$w1-1$/, '... mt5credit-refund-<wd>-<leg>');
is(progress($r1), 'paid', 'the client sees "paid"');
is(progress_legs($r1), 'refund refunded 25000 USD, refund refunded 5000 USD',
   '... and each leg refunded');
is(join(', ', map { $sb->sql1("SELECT refund_state || ' ' || refunded_minor "
    . "FROM mt5credit.deposit_refund_state('alice', '"
    . $sb->sql1("SELECT d.reference FROM mt5credit.deposit d JOIN "
                . "mt5credit.mt5_credit c ON c.deposit_id = d.id WHERE "
                . "c.id = $_->{credit}") . "')", user => 'portal') }
         $new, $old), 'refunded 25000, partially_refunded 5000',
   "the deposits' return page reads them refunded by the withdrawal");
is($sb->sql1("SELECT string_agg(destination, ', ' ORDER BY leg) FROM "
             . "mt5credit.withdrawal_progress_legs('alice', '$r1')",
             user => 'portal'), 'card visa …4242, card mastercard …5555',
   '... to the card of each payment, as the refunded charge names it');

# --- the trap: our own refunds come back as webhooks -------------------------

{
    my $l2 = leg_row($w1, 2);
    my %meta1 = (mt5credit_withdrawal => $r1, mt5credit_refund => $l1->{ref});
    my %meta2 = (mt5credit_withdrawal => $r1, mt5credit_refund => $l2->{ref});
    my @sent = (
        # out of order: the refund events before the charge's
        hook(type => 'refund.updated', pi => $new->{pi}, amount => 25000,
             refund => { id => $l1->{re}, metadata => \%meta1 }),
        hook(type => 'refund.created', pi => $old->{pi}, amount => 5000,
             refund => { id => $l2->{re}, metadata => \%meta2 }),
        # the cumulative form (today's API versions list no refunds)
        hook(type => 'charge.refunded', pi => $new->{pi}, amount => 25000),
        hook(type => 'charge.refunded', pi => $old->{pi}, amount => 5000),
        # the listed form, with our metadata
        hook(type => 'charge.refunded', pi => $new->{pi}, amount => 25000,
             refunds => [ [ $l1->{re}, 25000, 'succeeded', \%meta1 ] ]),
        # duplicated, each under a new event id
        hook(type => 'charge.refunded', pi => $new->{pi}, amount => 25000),
        hook(type => 'refund.updated', pi => $new->{pi}, amount => 25000,
             refund => { id => $l1->{re}, metadata => \%meta1 }),
        # the listed form without metadata, by the recorded id alone
        hook(type => 'charge.refunded', pi => $old->{pi}, amount => 5000,
             refunds => [ [ $l2->{re}, 5000, 'succeeded' ] ]),
    );
    is(join(',', grep { !/^200 ignored$/ } @sent), '',
       'eight webhooks of our own refunds: each stored and ignored');
    is(refund_credits("$old->{credit}, $new->{credit}"), 0,
       '... none became a refund debit');
    send_round();
    Mt5Credit::Worker::wait_for(sub { 0 }, 1.5);
    is(scalar(@{ $st->deals_with("wd:$w1") }) . ' '
       . scalar(grep { ($_->{Comment} // '') =~ /^rfd:/ }
                @{ $sim->deals_of(71801) }), '1 0',
       'MT5 was debited once (wd:), never rfd:');
    like($sb->sql1("SELECT detail FROM mt5credit.webhook_event WHERE "
                   . "event_type = 'refund.updated' ORDER BY id LIMIT 1"),
         qr/is leg \Q$l1->{ref}\E of a withdrawal/,
         "the event's record names the leg it was");
}

# --- a client's own refund after a leg: only its own amount -----------------

{
    my $d = deposit(71804, 20000);
    my ($r, $w) = withdraw(71804, 5000);
    wait_debit($w);
    send_round();
    is(legs($w), '1:succeeded:5000', 'a withdrawal of 50 refunds 50');
    # the dashboard refunds 30 more: Stripe's cumulative is now 80
    like(hook(type => 'charge.refunded', pi => $d->{pi}, amount => 8000),
         qr/^200 credit_created$/, "the client's own refund of 30 is a debit");
    is($sb->sql1("SELECT string_agg(paid_amount_minor::text, ',') FROM "
                 . "mt5credit.mt5_credit WHERE kind = 'refund' AND "
                 . "original_credit_id = $d->{credit}"), '3000',
       '... of 30.00 only: the leg\'s 50 is not debited again');
    like(hook(type => 'charge.refunded', pi => $d->{pi}, amount => 8000),
         qr/^200 (ignored|already_credited)$/, '... once');
    like(hook(type => 'charge.refunded', pi => $d->{pi}, amount => 25000),
         qr/^200 case_opened$/,
         'a cumulative refund past what was paid, legs counted, is a case');
}

# --- more than is refundable: refunds and one payout leg --------------------

{
    my $d = deposit(71802, 10000);
    my ($r, $w) = withdraw(71802, 40000);
    $wd{mixed} = $w;
    is(progress_legs($r), 'refund processing 10000 USD, payout processing '
       . '30000 USD', 'a withdrawal of 400 against a deposit of 100: a refund '
       . 'of 100 and a payout of 300');
    wait_debit($w);
    is($st->deals_with("wd:$w")->[0]{Profit}, '-400.00',
       '... the MT5 debit is the whole 400');
    send_round();
    is(legs($w), '1:succeeded:10000', 'the refund leg succeeded');
    my $po = $sb->psql("SELECT status, amount_minor, leg FROM "
                       . "mt5credit.payout WHERE withdrawal_id = $w");
    is(join(' ', @{ $po->[0] }), 'accepted 30000 2',
       '... and the payout leg was sent for the rest, 300.00');
    is(scalar(grep { $_->{metadata}{mt5credit_reference} eq $r }
              @{ book()->{payouts} }), 1, '... one payout at the provider');
    is(progress($r), 'sent', 'the client sees "sent" until the payout is paid');
    like($sb->psql("INSERT INTO mt5credit.payout (withdrawal_id, "
                   . "debit_credit_id, provider, amount_minor, currency, "
                   . "destination) SELECT $w, " . debit_of($w) . ", "
                   . "'stripe', 40000, 'USD', destination FROM "
                   . "mt5credit.withdrawal WHERE id = $w", may_fail => 1),
         qr/payout_withdrawal_id_key|payout of withdrawal/,
         'even the owner cannot add a payout of the whole amount');
}

# --- a refund that times out is looked up, not sent again -------------------

{
    my $d = deposit(71801, 7000);
    my ($r, $w) = withdraw(71801, 7000);
    $wd{timeout} = $w;
    wait_debit($w);
    faults(refund_post => 'delay_after', refund_delay => 3);
    send_round();
    faults();
    my $l = leg_row($w, 1);
    is($l->{status}, 'unknown', 'a refund POST that timed out is unknown');
    # Stripe made it: its webhooks come while we do not know
    like(hook(type => 'charge.refunded', pi => $d->{pi}, amount => 7000),
         qr/^200 ignored$/, 'its cumulative charge.refunded meanwhile: ignored');
    is(refund_credits($d->{credit}), 0, '... no refund debit');
    ok(rounds_until($w, 1, 'succeeded'),
       'once its lease has passed, the lookup finds it at the provider');
    $l = leg_row($w, 1);
    is(posts($l->{key}), 1, '... and it was never sent again');
    is(scalar @{ refunds_at($d->{pi}) }, 1, '... one refund exists');
}

# --- a refund that never arrived is sent again, under the same key ----------

{
    my $d = deposit(71801, 6000);
    my ($r, $w) = withdraw(71801, 6000);
    wait_debit($w);
    faults(refund_post => 'drop_before', refund_delay => 2);
    send_round();
    faults();
    is(leg_row($w, 1)->{status}, 'unknown', 'a dropped POST is unknown');
    is(scalar @{ refunds_at($d->{pi}) }, 0, '... and the provider has nothing');
    ok(rounds_until($w, 1, 'succeeded'),
       'the complete list lacked it: sent again, and it succeeded');
    my $l = leg_row($w, 1);
    is(posts($l->{key}), 2, '... two POSTs, under the one key');
    is(scalar @{ refunds_at($d->{pi}) }, 1, '... one refund at the provider');
    like($sb->sql1("SELECT string_agg(coalesce(from_status, '-') || '>' || "
                   . "to_status, ' ' ORDER BY h.id) FROM "
                   . "mt5credit.withdrawal_refund_history h JOIN "
                   . "mt5credit.withdrawal_refund r ON r.id = h.refund_id "
                   . "WHERE r.withdrawal_id = $w"),
         qr/sending>unknown unknown>pending pending>sending sending>succeeded/,
         '... history: unknown, absent, pending, sent');
}

# --- declined: a case, and two people give the money back -------------------

{
    my $d = deposit(71803, 4000);
    my ($r, $w) = withdraw(71803, 4000);
    $wd{declined} = $w;
    my $debit = wait_debit($w);
    faults(refund_post => 'decline');
    send_round();
    faults();
    is(leg_row($w, 1)->{status}, 'failed', 'a declined refund is failed');
    my $case = $sb->psql("SELECT id, kind, severity, amount_minor FROM "
                         . "mt5credit.case WHERE credit_id = $debit");
    is(join(' ', @{ $case->[0] }[1 .. 3]), 'refund_failed critical 4000',
       '... a critical case on the debit, for its share');
    is(progress($r), 'under_review', 'the client sees "under review"');
    send_round();
    is(posts(leg_row($w, 1)->{key}), 1, 'a failed refund is never sent again '
       . 'by itself');

    my $prop = $sb->sql1("SELECT mt5credit.case_propose($case->[0][0], "
        . "'correcting_credit', $debit, '40.00', 'refund declined: return "
        . "it', '[\"charge_disputed\"]')", user => 'ops_alice');
    like($sb->psql("SELECT mt5credit.case_decide($prop, 'approve', 'ok')",
                   user => 'ops_alice', may_fail => 1, raw => 1),
         qr/two-person rule/, 'the proposer cannot approve the return');
    my $cor = $sb->sql1("SELECT mt5credit.case_decide($prop, 'approve', "
                        . "'checked')", user => 'ops_bob');
    ok($st->wait_status($cor, 'done'), 'another person approves; the worker '
       . 'gives the money back');
    is($st->deals_with("cor:$cor")->[0]{Profit}, '40.00', '... USD 40.00');
}

# --- failed later, after it was accepted, and after it succeeded ------------

{
    my $d = deposit(71803, 3000);
    my ($r, $w) = withdraw(71803, 3000);
    $wd{failed_later} = $w;
    my $debit = wait_debit($w);
    faults(refund_status => 'pending');
    send_round();
    faults();
    my $l = leg_row($w, 1);
    is($l->{status}, 'accepted', 'a refund the provider has pending: accepted');
    is(progress_legs($r), 'refund refund_sent 3000 USD', '... "refund sent"');
    $sb->http('POST', '/control/refund', port => $port,
              body => $json->encode({ id => $l->{re}, status => 'failed',
                                      failure_reason => 'expired_or_canceled_card' }),
              headers => [ [ 'Content-Type', 'application/json' ] ]);
    like(hook(type => 'refund.failed', pi => $d->{pi}, amount => 3000,
              refund => { id => $l->{re}, status => 'failed',
                          failure_reason => 'expired_or_canceled_card',
                          metadata => { mt5credit_withdrawal => $r,
                                        mt5credit_refund => $l->{ref} } }),
         qr/^200 ignored$/, 'its refund.failed webhook is no debit');
    sleep 1.1;
    send_round();
    is(leg_row($w, 1)->{status}, 'failed', 'the status check sees it failed');
    is(join(' ', @{ $sb->psql("SELECT kind, severity FROM mt5credit.case "
                              . "WHERE credit_id = $debit")->[0] }),
       'refund_failed critical', '... a critical case');

    my $d2 = deposit(71803, 2000);
    my ($r2, $w2) = withdraw(71803, 2000);
    $wd{returned} = $w2;
    my $debit2 = wait_debit($w2);
    send_round();
    my $l2 = leg_row($w2, 1);
    is($l2->{status}, 'succeeded', 'a refund that succeeded');
    $sb->http('POST', '/control/refund', port => $port,
              body => $json->encode({ id => $l2->{re}, status => 'failed',
                                      failure_reason => 'lost_or_stolen_card' }),
              headers => [ [ 'Content-Type', 'application/json' ] ]);
    sleep 1.1;
    send_round();
    is(leg_row($w2, 1)->{status}, 'failed',
       '... failed later, within the watch: seen by the recheck');
    is($sb->sql1("SELECT kind FROM mt5credit.case WHERE credit_id = $debit2"),
       'refund_failed', '... a case');
    is(refund_credits("$d->{credit}, $d2->{credit}"), 0,
       'no refund debit came of either');
}

# --- MT5 refuses the debit: nothing is sent -------------------------------

{
    my $d = deposit(71803, 9000);
    $sim->manual_deal(login => 71803, amount => '-85.00',
                      comment => 'trading loss');
    my ($r, $w) = withdraw(71803, 9000);
    my $debit = debit_of($w);
    ok($st->wait_status($debit, 'failed'), 'MT5 refuses the debit');
    send_round();
    is(legs($w), '', 'no refund row');
    is(scalar @{ refunds_at($d->{pi}) }, 0, '... nothing sent to the provider');
    is(progress($r), 'declined', 'the client sees "declined"');
}

$st->stop_worker('w1');

# --- reconciliation: each leg against its own row ----------------------------
#
# The day's file (the generic format): every payment, the client's own
# refund, a row per leg the provider holds, the payout leg's row.  Planted:
# one leg's row for a cent less, the row of a leg we hold failed, and no
# row for the leg that timed out (window 0: a break today).

{
    my $at = strftime('%Y-%m-%dT%H:%M:%SZ', gmtime);
    my ($csv, $sum, $n) = ('', 0, 0);
    my $row = sub {
        my ($type, $pi, $mv, $amount, $wref) = @_;
        $n++;
        $sum += $amount;
        $csv .= "g_$n,$type,$pi,$mv,USD," . Mt5Credit::Settlement::major($amount)
              . ",0.00,$at,po_day," . ($wref // '') . "\n";
    };
    $row->('payment', $_->[0], '', $_->[1]) for @{ $sb->psql(
        "SELECT provider_payment_id, paid_amount_minor FROM "
        . "mt5credit.mt5_credit WHERE kind = 'deposit' ORDER BY id") };
    $row->('refund', $_->[0], 're_client_' . $n, -$_->[1]) for @{ $sb->psql(
        "SELECT o.provider_payment_id, r.paid_amount_minor FROM "
        . "mt5credit.mt5_credit r JOIN mt5credit.mt5_credit o ON o.id = "
        . "r.original_credit_id WHERE r.kind = 'refund'") };
    for my $l (@{ $sb->psql(
        "SELECT withdrawal_id, leg, payment_key, provider_refund_id, "
        . "amount_minor FROM mt5credit.withdrawal_refund WHERE "
        . "provider_refund_id IS NOT NULL ORDER BY id") }) {
        my ($w, $leg, $pi, $re, $amount) = @$l;
        next if $w == $wd{timeout} || $w == $wd{returned};
        $amount -= 1 if $w == $w1 && $leg == 2;
        $row->('refund', $pi, $re, -$amount);
    }
    my ($po, $pref, $pamount) = @{ $sb->psql(
        "SELECT p.provider_payout_id, w.reference, p.amount_minor FROM "
        . "mt5credit.payout p JOIN mt5credit.withdrawal w ON w.id = "
        . "p.withdrawal_id WHERE w.id = $wd{mixed}")->[0] };
    $row->('withdrawal', '', $po, -$pamount, $pref);

    my $file = $sb->write_file('legs.csv', "id,type,payment_id,movement_id,"
        . "currency,amount,fee,created_at,payout_id,withdrawal_reference\n"
        . $csv);
    my $control = $sb->write_file('legs-control.csv', "payout_id,currency,"
        . "amount,count\npo_day,USD," . Mt5Credit::Settlement::major($sum)
        . ",$n\n");
    my $rconf = Mt5Credit::Worker::config($sb, 'recon',
        servers => [ [ 'live1', $sim, recon_groups => 'real\\usd' ] ],
        recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                          . ' dbname=mt5credit user=recon"',
        recon_out => $sb->dir, call_timeout => 3, lease => 20,
        recon_match_window => 0);
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $rconf,
        '--provider', 'stripe', '--day', strftime('%Y-%m-%d', gmtime),
        '--tz', 'UTC', '--currency', 'USD', '--format', 'generic',
        '--settlement', $file, '--control', $control);
    my ($run) = $out =~ /^run (\d+):/m;
    ok($run, 'the day is reconciled') or diag $out;
    my @found = map { "$_->[0] $_->[1]" } @{ $sb->psql(
        "SELECT kind, item_key FROM mt5credit.recon_item WHERE run_id = "
        . ($run // 0) . " ORDER BY kind, item_key") };
    my $ref = sub { "wd:$_[0]" };
    is_deeply(\@found, [ sort
        "amount_mismatch wd:$w1/leg2",
        "debited_not_settled wd:$wd{declined}",
        "debited_not_settled wd:$wd{returned}",
        "debited_not_settled wd:$wd{timeout}",
        "deal_without_reference deal:live1:"
            . $sb->sql1("SELECT max(deal_ticket) FROM mt5credit.recon_deal "
                        . "WHERE run_id = " . ($run // 0)
                        . " AND comment = 'trading loss'"),
        "leg_state_mismatch wd:$wd{failed_later}/leg1" ],
       'exactly the planted breaks: no leg row is a refund without a debit, '
       . 'none pairs with the client\'s own refund')
        or diag explain \@found;
    is($sb->sql1("SELECT n FROM mt5credit.recon_count WHERE run_id = "
                 . ($run // 0) . " AND dimension = 'matched' AND name = "
                 . "'withdrawal'"), 3,
       'the withdrawals whose legs all settled as planned are matched '
       . '(refunds only, refunds and a payout)');
    is($sb->sql1("SELECT n FROM mt5credit.recon_count WHERE run_id = "
                 . ($run // 0) . " AND dimension = 'matched' AND name = "
                 . "'refund'"), 1, "... and the client's own refund is too");
}

{
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'status', '--database',
        'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit user=worker',
        '--prometheus');
    my $failed = $sb->sql1("SELECT count(*) FROM mt5credit.withdrawal_refund "
                           . "WHERE status = 'failed'");
    like($out, qr/^mt5credit_refunds\{status="failed"\} $failed$/m,
         "mt5credit status counts the refund legs by status ($failed failed)");
}

{
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'withdrawals', '--database',
        'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit '
        . 'user=ops_bob', 'show', $sb->sql1("SELECT reference FROM "
        . "mt5credit.withdrawal WHERE id = $wd{failed_later}"));
    my ($sent) = $out =~ /"sent": \[(.*?)\]/s;
    ok(($sent // '') =~ /"status": "failed"/
       && $sent =~ /"failure_code": "expired_or_canceled_card"/
       && $sent =~ /"card": "visa 4242"/,
       '`mt5credit withdrawals show` gives each leg as sent: failed, why, '
       . 'and to which card') or diag $out;
}

like($said, qr{POST /v1/refunds}, 'the sender logged its refunds');
unlike($said . Mt5Credit::Worker::log_of($sb, 'w1'), qr/\Q$KEY\E/,
       'the API key is in no log');

done_testing();
