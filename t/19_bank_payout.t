#!/usr/bin/perl
#
# The payout leg through a rail that pays a client: the generic payout
# API of a bank-transfer PSP (docs/providers.md, the double in
# t/payoutsim/), its signed status webhooks through the edge, and Stripe
# payouts kept only for clients who are connected accounts.  Impossible:
#   - the payout leg paid to anything but the request's beneficiary
#     token, for anything but the plan's payout leg (the refund legs go
#     back to the payments first)
#   - a payout whose outcome is unknown sent again before the PSP's
#     lookup by our reference said it is not there; one made twice
#   - an answer that is not complete (an error, a list that says there is
#     more) taken for "not there"
#   - a declined payout, or one returned by the bank after it was paid,
#     passing unnoticed (a critical case)
#   - a status webhook taken as the outcome: it only makes the sender ask
#   - a Stripe payout to the broker's own bank account when a client was
#     meant (stripe_connect pays connected accounts only, on their behalf)
#   - a payout sent with no rail configured, or a misspelt rail accepted
#   - the API keys in any log
#   - a paused provider's refund leg or payout sent (sql/046)
#   - the sender's own metrics missing a provider (metrics_dir,
#     payout_metrics_listen)

use strict;
use warnings;

use File::Temp qw(tempdir);
use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $json = JSON::PP->new->canonical;
my $rand = sub { join '', map { ('a' .. 'z')[rand 26] } 1 .. 20 };
my $STRIPE_KEY = 'rk_test_bank_' . $rand->();
my $PSP_KEY = 'psp_live_' . $rand->();
my $HOOK_SECRET = 'whsec_' . encode_base64('bank-hook-secret-0123456789', '');

# the edge's secret for the PSP, before the edge starts
my $hookfile = tempdir(CLEANUP => 1) . '/bank.secret';
open my $hf, '>', $hookfile or die $!;
print $hf "$HOOK_SECRET\n";
close $hf;
chmod 0644, $hookfile;

my $st = Mt5Credit::Stack->new(locations => <<"LOC");
        location = /webhooks/bank {
            mt5_credit_webhook bank;
            mt5_credit_signature standard;
            mt5_credit_secret_file $hookfile;
        }
LOC
my $sb = $st->sb;
my $sim = $st->sim;
$st->account(login => 71901, balance => '250.00');
$st->account(login => 71902, balance => '800.00');

# the bank rail pays USD; the schema owner lists it (035)
$sb->psql("INSERT INTO mt5credit.payout_currency VALUES ('bank', 'USD')");

my %payments;
my $sstate = $sb->dir . '/stripe.json';
$sb->write_file('stripe.json', '{}');
my $sport = Mt5Credit::Sandbox::free_port();
$sb->spawn('stripesim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/stripesim/stripesim.pl", $sport,
           $sstate, $STRIPE_KEY);
my $pstate = $sb->dir . '/psp.json';
my $pport = Mt5Credit::Sandbox::free_port();
$sb->spawn('payoutsim', 'perl',
           "$Mt5Credit::Sandbox::ROOT/t/payoutsim/payoutsim.pl", $pport,
           $pstate, $PSP_KEY);
Mt5Credit::Sandbox::wait_port($_, 'double') for $sport, $pport;

my $skey = $sb->write_file('stripe-api.key', "$STRIPE_KEY\n");
my $pkey = $sb->write_file('psp-api.key', "$PSP_KEY\n");
chmod 0600, $skey, $pkey;
my %common = (call_timeout => 1, lease => 8, settle_margin => 1,
    provider_api_url => "http://127.0.0.1:$sport",
    provider_api_key_file => $skey,
    payout_timeout => 1, payout_lease => 6, payout_margin => 0,
    payout_backoff => 1, payout_recheck => 1, payout_max_lookups => 2,
    payout_paid_watch => 60);
my $conf = $st->worker_config('w1', %common, payout_rail => 'generic',
    payout_provider => 'bank', payout_api_url => "http://127.0.0.1:$pport",
    payout_api_key_file => $pkey);
Mt5Credit::Worker::start($sb, 'w1', $conf);

# the PSP's status webhooks go to the edge
$sb->http('POST', '/control/hook', port => $pport,
          body => $json->encode({ url => 'http://127.0.0.1:'
                                         . $sb->nginx_port . '/webhooks/bank',
                                  secret => $HOOK_SECRET }),
          headers => [ [ 'Content-Type', 'application/json' ] ]);

my $said = '';

sub send_round {
    my ($c) = @_;
    my ($rc, $out) = Mt5Credit::Worker::run($sb, 'payout', '-c', $c || $conf,
                                            '--once');
    $said .= $out;
    return wantarray ? ($rc, $out) : $rc;
}

sub faults { $sb->write_file('psp.json.faults', $json->encode({ @_ })) }

sub psp { $json->decode($sb->http('GET', '/control/payouts',
                                  port => $pport)->{body}) }

sub at_psp { [ grep { $_->{reference} eq $_[0] } @{ psp()->{payouts} } ] }

sub posts { psp()->{posts}{"mt5credit-payout-$_[0]"} // 0 }

sub settle {
    my ($id, $status, $code) = @_;
    return $json->decode($sb->http('POST', '/control/payout', port => $pport,
        body => $json->encode({ id => $id, status => $status,
                                failure_code => $code }),
        headers => [ [ 'Content-Type', 'application/json' ] ])->{body});
}

my $seq = 0;

sub deposit {
    my ($login, $amount) = @_;
    my $pi = 'pi_bank_' . $$ . '_' . ++$seq;
    $payments{$pi} = { currency => 'usd', amount => $amount };
    $sb->write_file('stripe.json', $json->encode(\%payments));
    my $c = $st->pay(login => $login, amount => $amount, pi => $pi);
    ok($st->wait_status($c, 'done'), "deposit $amount on $login credited");
    return { credit => $c, pi => $pi };
}

sub withdraw {
    my ($login, $amount, %o) = @_;
    $seq++;
    my $ref = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
        . "'alice', 'bank-test-$seq', '" . ($o{provider} || 'bank') . "', "
        . "'live1', $login, $amount, 'USD', '"
        . ($o{to} || "bnf_alice_$seq") . "')", user => 'portal');
    my $digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$ref', "
                           . "'ok')", user => 'ops_alice');
    $sb->psql("SELECT mt5credit.withdrawal_approve('$ref', '$digest', "
              . "'checked')", user => 'ops_bob');
    my $id = $sb->sql1("SELECT id FROM mt5credit.withdrawal "
                       . "WHERE reference = '$ref'");
    ok($st->wait_status($sb->sql1("SELECT id FROM mt5credit.mt5_credit WHERE "
                                  . "withdrawal_id = $id"), 'done'),
       "withdrawal $ref debited in MT5");
    return ($ref, $id);
}

sub payout {
    my ($wid) = @_;
    my $r = $sb->psql("SELECT status, attempts, coalesce(provider_payout_id, "
                      . "''), amount_minor, lookups FROM mt5credit.payout "
                      . "WHERE withdrawal_id = $wid");
    return undef unless @$r;
    return { status => $r->[0][0], attempts => $r->[0][1], id => $r->[0][2],
             amount => $r->[0][3], lookups => $r->[0][4] };
}

sub progress {
    $sb->sql1("SELECT mt5credit.withdrawal_progress('alice', '$_[0]')",
              user => 'portal')
}

sub rounds_until {
    my ($wid, $want) = @_;
    return Mt5Credit::Worker::wait_for(sub {
        send_round();
        (payout($wid)->{status} // '') eq $want }, 15);
}

# --- refunds first, then the rest by bank transfer ----------------------------

my $d1 = deposit(71901, 10000);
my ($r1, $w1) = withdraw(71901, 35000);
is(send_round(), 0, 'a send round');
is($sb->sql1("SELECT status || ' ' || amount_minor FROM "
             . "mt5credit.withdrawal_refund WHERE withdrawal_id = $w1"),
   'succeeded 10000', 'the deposit of 100 is refunded to its payment first');
my $p1 = payout($w1);
is($p1->{status} . ' ' . $p1->{amount}, 'accepted 25000',
   '... and the rest, 250, is a bank payout, accepted by the PSP');
my $at = at_psp($r1);
is(scalar @$at, 1, 'one payout at the PSP carries our reference');
is(join(' ', @{ $at->[0] }{qw(amount_minor currency beneficiary)}),
   "25000 USD bnf_alice_$seq",
   '... for the payout leg, to the beneficiary token the portal gave');
is($at->[0]{metadata}{mt5credit_debit}, "wd:$w1", '... naming the MT5 debit');
is($p1->{id}, $at->[0]{id}, "... and the PSP's id is recorded");
is(posts($w1), 1, 'sent once, under mt5credit-payout-<wd>');
is(progress($r1), 'sent', 'the client sees "sent"');

# the PSP pays it and says so by webhook: the sender asks, and records it
my $hook = settle($p1->{id}, 'paid');
is($hook->{delivered}, 200, "the PSP's signed payout.paid reaches the edge");
like($sb->sql1("SELECT disposition || ': ' || detail FROM "
               . "mt5credit.webhook_event WHERE provider = 'bank' ORDER BY "
               . "id DESC LIMIT 1"),
     qr/^ignored: payout \Q$p1->{id}\E is \Q$r1\E, paid at the provider, accepted here/,
     '... stored and taken as a wake-up, not as the outcome');
is(payout($w1)->{status}, 'accepted', '... which it did not change');
send_round();
is(payout($w1)->{status}, 'paid', 'the next round asks the PSP: paid');
is(progress($r1), 'paid', 'the client sees "paid"');

# the bank returns it: the webhook wakes the check, the check sees it
settle($p1->{id}, 'returned', 'account_closed');
send_round();
is(payout($w1)->{status}, 'rejected', 'returned by the bank after it was '
   . 'paid: rejected');
is($sb->sql1("SELECT kind || ' ' || severity FROM mt5credit.case WHERE "
             . "kind = 'payout_rejected' AND details->>'payout' = '$r1'"),
   'payout_rejected critical', '... a critical case (the debit stands)');

# --- the PSP's faults ---------------------------------------------------------

{
    my ($r, $w) = withdraw(71902, 4000);
    faults(payout_post => 'delay_after', payout_delay => 3);
    send_round();
    faults();
    is(payout($w)->{status}, 'unknown', 'a POST that timed out is unknown');
    ok(rounds_until($w, 'accepted'), 'looked up by reference once its lease '
       . 'passed: found');
    is(posts($w), 1, '... and never sent again');
    is(scalar @{ at_psp($r) }, 1, '... one payout at the PSP');
}

{
    my ($r, $w) = withdraw(71902, 4100);
    faults(payout_post => 'drop_before', payout_delay => 2);
    send_round();
    faults();
    is(payout($w)->{status}, 'unknown', 'a dropped POST is unknown');
    ok(rounds_until($w, 'accepted'),
       'the lookup says it is not there: sent again, accepted');
    is(posts($w), 2, '... two POSTs under the one key');
    is(scalar @{ at_psp($r) }, 1, '... one payout at the PSP');
}

{
    my ($r, $w) = withdraw(71902, 4200);
    faults(payout_post => 'http500_after');
    send_round();
    faults(payout_list => 'more_lie');
    sleep 6.5;
    send_round();
    is(payout($w)->{status}, 'unknown', 'a lookup that says there is more '
       . 'is no answer: still unknown');
    faults(payout_list => 'http500');
    sleep 2.5;
    send_round();
    faults();
    is(posts($w), 1, '... nothing was sent again');
    is($sb->sql1("SELECT count(*) FROM mt5credit.case WHERE kind = "
                 . "'payout_no_answer' AND details->>'payout' = '$r'"), 1,
       '... and after payout_max_lookups a person is told');
    ok(rounds_until($w, 'accepted'), 'the PSP answers again: found');
    is(scalar @{ at_psp($r) }, 1, '... the one payout the 500 hid');
}

{
    my ($r, $w) = withdraw(71902, 4300, to => 'bad_closed_account');
    send_round();
    is(payout($w)->{status}, 'rejected', 'a declined beneficiary: rejected');
    is($sb->sql1("SELECT details->>'failure_code' FROM mt5credit.case WHERE "
                 . "kind = 'payout_rejected' AND details->>'payout' = '$r'"),
       'beneficiary_invalid', "... a case with the PSP's reason");
    send_round();
    is(posts($w), 1, '... never sent again by itself');
}

# --- no rail, a misspelt rail, and Stripe for connected accounts only ----------

{
    my $none = $st->worker_config('w2', %common);
    my ($r, $w) = withdraw(71902, 4400);
    my ($rc, $out) = send_round($none);
    is($rc, 0, 'payout_rail none: the round runs');
    like($out, qr/payout_rail is none: refund legs are sent, payout legs wait/,
         '... saying that payout legs wait');
    is(payout($w)->{status}, 'pending', '... and the payout leg is not sent');

    my $typo = $st->worker_config('w3', %common, payout_rail => 'stripe');
    my ($trc, $tout) = Mt5Credit::Worker::run($sb, 'payout', '-c', $typo,
                                              '--once');
    is($trc, 2, 'payout_rail "stripe" (no such rail): refused');
    like($tout, qr/unknown payout_rail "stripe" \(generic, stripe_connect or none\)/,
         '... naming the key and what it may be');
    my $half = $st->worker_config('w4', %common, payout_rail => 'generic');
    ($trc, $tout) = Mt5Credit::Worker::run($sb, 'payout', '-c', $half,
                                           '--once');
    like($tout, qr/payout_rail generic needs payout_provider, payout_api_url and payout_api_key_file/,
         'the generic rail without its API: refused, saying what it needs');
    send_round();
    is(payout($w)->{status}, 'accepted', 'the generic rail then sends it');
}

{
    my $connect = $st->worker_config('w5', %common,
                                     payout_rail => 'stripe_connect');
    my ($r, $w) = withdraw(71902, 4500, provider => 'stripe',
                           to => 'ba_broker_own_bank');
    send_round($connect);
    is(payout($w)->{status}, 'rejected', 'stripe_connect to a bank account '
       . 'token, not a connected account: declined before any request');
    is($sb->sql1("SELECT details->>'failure_code' FROM mt5credit.case WHERE "
                 . "kind = 'payout_rejected' AND details->>'payout' = '$r'"),
       'not_a_connected_account', '... a case saying why');
    my $book = $json->decode($sb->http('GET', '/control/payouts',
                                       port => $sport)->{body});
    is(scalar(@{ $book->{payouts} }), 0, '... nothing reached Stripe');

    my ($r2, $w2) = withdraw(71902, 4600, provider => 'stripe',
                             to => 'acct_client_bob');
    send_round($connect);
    is(payout($w2)->{status}, 'accepted', 'to a connected account: accepted');
    $book = $json->decode($sb->http('GET', '/control/payouts',
                                    port => $sport)->{body});
    is(join(' ', map { "$_->{account} $_->{amount}" } @{ $book->{payouts} }),
       'acct_client_bob 4600', '... made on behalf of that account '
       . '(Stripe-Account), for the leg');
}

# --- a paused provider's refund legs and payouts wait (sql/046) ---------------

{
    $st->account(login => 71909, balance => '300.00');
    my $d = deposit(71909, 10000);
    my ($r, $w) = withdraw(71909, 15000);
    for my $p (qw(stripe bank)) {
        $sb->psql("SELECT mt5credit.pause_set('provider', '$p', "
                  . "'payout rail under review')", user => 'ops_alice');
    }
    send_round();
    is($sb->sql1("SELECT status FROM mt5credit.withdrawal_refund WHERE "
                 . "withdrawal_id = $w"), 'pending',
       'stripe paused: the refund leg is not sent');
    is(payout($w)->{status}, 'pending', 'bank paused: the payout is not sent');
    is(scalar @{ at_psp($r) }, 0, '... nothing reached the PSP');
    is($sb->sql1("SELECT string_agg(target || '=' || held, ' ' ORDER BY "
                 . "target) FROM mt5credit.pause_list(false)",
                 user => 'ops_bob'),
       'bank=1 stripe=1', 'each pause holds its one');
    for my $p (qw(stripe bank)) {
        $sb->psql("SELECT mt5credit.pause_resume('provider', '$p', NULL)",
                  user => 'ops_bob');
    }
    send_round();
    is($sb->sql1("SELECT status FROM mt5credit.withdrawal_refund WHERE "
                 . "withdrawal_id = $w"), 'succeeded',
       'resumed: the refund leg is sent');
    is(payout($w)->{status}, 'accepted', '... and the payout');
    is(scalar @{ at_psp($r) }, 1, '... once');
}

# --- the sender's own metrics (metrics_dir) ------------------------------------

{
    mkdir $sb->dir . '/textfile';
    (my $text = `cat $conf`) =~ s/^(worker_name = .*)$/$1\nmetrics_dir = @{[ $sb->dir ]}\/textfile/m;
    my $mconf = $sb->write_file('payout-metrics.conf', $text);
    my ($name) = $text =~ /^worker_name = (\S+)$/m;
    send_round($mconf);
    my $prom = do { local $/;
                    open my $f, '<', $sb->dir . "/textfile/mt5credit-payout-$name.prom"
                        or die "no textfile: $!";
                    <$f> };
    like($prom, qr/^mt5credit_provider_requests_total\{worker="[^"]+",program="payout",provider="stripe",code="2xx"\} \d+$/m,
         "the payout sender's own metrics: the refunds' provider");
    like($prom, qr/^mt5credit_provider_requests_total\{worker="[^"]+",program="payout",provider="bank",code="2xx"\} \d+$/m,
         '... and the rail\'s');
    like($prom, qr/^mt5credit_program_last_round_timestamp_seconds\{worker="[^"]+",program="payout"\} \d{10}$/m,
         '... and its last round');

    # over HTTP too, while it runs (payout_metrics_listen)
    my $mport = $sb->free_port;
    (my $htext = $text) =~ s/^metrics_dir = .*$/payout_metrics_listen = 127.0.0.1:$mport/m;
    my $hconf = $sb->write_file('payout-listen.conf', $htext);
    Mt5Credit::Worker::start_cmd($sb, 'px', 'payout', $hconf);
    my $r;
    ok(Mt5Credit::Worker::wait_for(sub {
           $r = eval { $sb->http('GET', '/metrics', port => $mport) } // {};
           ($r->{status} // 0) == 200 }, 30),
       'the sender serves GET /metrics on payout_metrics_listen');
    like($r->{body}, qr/^mt5credit_provider_requests_total\{worker="[^"]+",program="payout",provider="bank",code="2xx"\} \d+$/m,
         '... the rail\'s requests among them');
    is(Mt5Credit::Worker::stop($sb, 'px'), 0, '... and it stops on TERM');
    $said .= Mt5Credit::Worker::log_of($sb, 'px');
}

$st->stop_worker('w1');
unlike($said . Mt5Credit::Worker::log_of($sb, 'w1'),
       qr/\Q$STRIPE_KEY\E|\Q$PSP_KEY\E/, 'neither API key is in any log');

done_testing();
