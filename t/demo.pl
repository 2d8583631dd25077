#!/usr/bin/perl
#
# The main job, end to end on embedded defaults: a local PostgreSQL, Redis
# and nginx with ngx_mt5_credit_module on loopback ports in a temp dir, the
# MT5 Web API simulator over HTTPS, and the credit worker; a client's
# deposits created the way the portal does; signed provider webhooks
# (genuine, duplicated, a second event type for the same payment, forged,
# stale, one whose amount disagrees) sent to the edge; what was stored and
# refused, and why; then the worker turning each credit into exactly one
# MT5 balance deal, and a refund into one debit; a withdrawal approved by
# two people, planned back the way the money came, debited in MT5 first
# and then paid out through a bank-transfer PSP's payout API (a double of
# the generic payout rail); a crypto deposit through Coinbase Commerce's
# own events, confirmed, and one paid short (a case, never a credit); a
# card deposit through Adyen, a batch whose forged item is refused while
# the others are stored, "[accepted]" when Adyen sends it again; the
# day's reconciliation
# against Stripe's settlement file, with its CSV and HTML report, and the
# cases it opened as a person at the case desk sees them.
#
#   make demo                 (installs packages, builds, runs this)
#   MT5CREDIT_KEEP=1 make demo   keeps the temp dir to look around

use strict;
use warnings;

use POSIX ();

use lib "t/lib";
use Mt5Credit::Sandbox;
use Mt5Credit::Mt5Sim;
use Mt5Credit::Worker;
use Mt5Credit::Settlement;
use Mt5Credit::Provider qw(stripe_event stripe_headers standard_event
                           standard_headers coinbase_event hmac_hex
                           adyen_item adyen_batch);

$| = 1;

my $stripe_secret = 'whsec_demo_' . join('', map { ('a'..'z')[rand 26] } 1 .. 24);
my $psp_secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
my $cc_secret = 'cc_demo_' . join('', map { ('a'..'z')[rand 26] } 1 .. 24);
my $adyen_key = join('', map { ('0'..'9', 'A'..'F')[rand 16] } 1 .. 64);

sub say_step { print "\n== $_[0]\n" }
sub show {
    my ($what, $res) = @_;
    printf "  %-46s -> %s %s\n", $what, $res->{status}, $res->{body};
}

my $sb = Mt5Credit::Sandbox->new;

say_step('starting PostgreSQL 15, Redis and nginx on 127.0.0.1');
my $pg = $sb->start_postgres;
my $redis = $sb->start_redis;
my $stripe_file = $sb->write_file('secrets/stripe', "$stripe_secret\n");
my $psp_file = $sb->write_file('secrets/acmepay', "$psp_secret\n");
my $cc_file = $sb->write_file('secrets/coinbase', "$cc_secret\n");
my $adyen_file = $sb->write_file('secrets/adyen', "$adyen_key\n");

my $port = $sb->start_nginx(<<"HTTP");
    mt5_credit_postgres "%%PG%%";
    mt5_credit_redis %%REDIS%%;
    server {
        listen 127.0.0.1:%%PORT%%;

        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $stripe_file;
        }

        location = /webhooks/acmepay {
            mt5_credit_webhook acmepay;
            mt5_credit_signature standard;
            mt5_credit_secret_file $psp_file;
        }

        location = /webhooks/coinbase {
            mt5_credit_webhook coinbase;
            mt5_credit_signature hmac-sha256 header=X-CC-Webhook-Signature encoding=hex;
            mt5_credit_secret_file $cc_file;
        }

        location = /webhooks/adyen {
            mt5_credit_webhook adyen;
            mt5_credit_signature adyen;
            mt5_credit_secret_file $adyen_file;
        }

        location = /status { mt5_credit_status; }
    }
HTTP
print "  PostgreSQL :$pg (schema migrated), Redis :$redis, nginx :$port\n";
print "  sandbox: ", $sb->dir, "\n";

say_step('the portal: alice owns MT5 login 50001 (USD) and 50002 (EUR)');
$sb->psql(<<'SQL', user => 'portal');
SELECT mt5credit.register_account('alice', 'demo-live', 50001, 'USD');
SELECT mt5credit.register_account('alice', 'demo-live', 50002, 'EUR');
SQL

my $dep = $sb->sql1("SELECT reference FROM mt5credit.create_deposit('alice', "
    . "'button-press-0001', 'stripe', 'demo-live', 50001, 50000, 'USD')",
    user => 'portal');
my $again = $sb->sql1("SELECT reference FROM mt5credit.create_deposit('alice', "
    . "'button-press-0001', 'stripe', 'demo-live', 50001, 50000, 'USD')",
    user => 'portal');
print "  deposit $dep: USD 500.00 to 50001 (a double click returned $again again)\n";

my $fx = $sb->psql("SELECT reference, credit_amount_minor FROM "
    . "mt5credit.create_deposit('alice', 'button-press-0002', 'acmepay', "
    . "'demo-live', 50002, 25000, 'USD', 0.92345, 'ecb-reference', "
    . "now())", user => 'portal')->[0];
print "  deposit $fx->[0]: USD 250.00 to the EUR account 50002, converted once"
    . " at 0.92345 = EUR " . sprintf('%.2f', $fx->[1] / 100) . "\n";

my $foreign = $sb->psql("SELECT mt5credit.create_deposit('mallory', "
    . "'button-press-0003', 'stripe', 'demo-live', 50001, 100, 'USD')",
    user => 'portal', may_fail => 1);
print "  mallory asking to fund alice's login: ",
    ($foreign =~ /ERROR:\s+(.*)/)[0], "\n";

say_step('the provider sends webhooks');
my $paid = stripe_event(deposit => $dep, amount => 50000, pi => 'pi_demo_1');
my $h = stripe_headers($stripe_secret, $paid);
show('Stripe checkout.session.completed (paid)',
     $sb->http('POST', '/webhooks/stripe', body => $paid, headers => $h));
show('the same delivery again (a retry)',
     $sb->http('POST', '/webhooks/stripe', body => $paid, headers => $h));
my $pi = stripe_event(type => 'payment_intent.succeeded', deposit => $dep,
                      amount => 50000, pi => 'pi_demo_1');
show('payment_intent.succeeded, same payment',
     $sb->http('POST', '/webhooks/stripe', body => $pi,
               headers => stripe_headers($stripe_secret, $pi)));
(my $forged = $paid) =~ s/50000/5000000/g;
show('forged: amount raised, old signature',
     $sb->http('POST', '/webhooks/stripe', body => $forged, headers => $h));
show('signed with someone else\'s secret',
     $sb->http('POST', '/webhooks/stripe', body => $paid,
               headers => stripe_headers('whsec_guess', $paid)));
show('a replay from 20 minutes ago',
     $sb->http('POST', '/webhooks/stripe', body => $paid,
               headers => stripe_headers($stripe_secret, $paid, time - 1200)));
show('no signature at all',
     $sb->http('POST', '/webhooks/stripe', body => $paid));
my $short = stripe_event(deposit => $dep, amount => 40000, pi => 'pi_demo_2');
show('another payment of 400.00 for the same deposit',
     $sb->http('POST', '/webhooks/stripe', body => $short,
               headers => stripe_headers($stripe_secret, $short)));
my $psp = standard_event(payment => 'acme-77001', deposit => $fx->[0],
                         amount => 25000, currency => 'USD');
show('acmepay (Standard Webhooks) payment.succeeded',
     $sb->http('POST', '/webhooks/acmepay', body => $psp,
               headers => standard_headers($psp_secret, 'msg_demo_1', $psp)));

say_step('a crypto deposit: Coinbase Commerce\'s own events');
# its bodies are read by rows of JSON paths (sql/076), named once
$sb->psql("INSERT INTO mt5credit.provider_payload VALUES "
          . "('coinbase', 'coinbase')");
my $cc = sub {
    my ($what, $body) = @_;
    show($what, $sb->http('POST', '/webhooks/coinbase', body => $body,
                          headers => [ [ 'X-CC-Webhook-Signature',
                                         hmac_hex($cc_secret, $body) ] ]));
};
my $crypto = $sb->sql1("SELECT reference FROM mt5credit.create_deposit("
    . "'alice', 'button-press-0004', 'coinbase', 'demo-live', 50001, 12000, "
    . "'USD')", user => 'portal');
my $short_crypto = $sb->sql1("SELECT reference FROM mt5credit.create_deposit("
    . "'alice', 'button-press-0005', 'coinbase', 'demo-live', 50001, 30000, "
    . "'USD')", user => 'portal');
print "  deposits $crypto (USD 120.00) and $short_crypto (USD 300.00), "
    . "each a charge priced in USD\n";
$cc->('charge:pending (seen on the chain)',
      coinbase_event('charge:pending', charge => 'chg-demo-1',
                     deposit => $crypto, price => '120.00',
                     payments => [ [1, '120.00', 'PENDING'] ],
                     timeline => [ ['NEW'], ['PENDING'] ]));
$cc->('charge:confirmed, "120.00" paid in full',
      coinbase_event('charge:confirmed', charge => 'chg-demo-1',
                     deposit => $crypto, price => '120.00',
                     payments => [ [1, '120.00'] ],
                     timeline => [ ['NEW'], ['PENDING'], ['COMPLETED'] ]));
$cc->('charge:failed, "250.00" of "300.00" paid',
      coinbase_event('charge:failed', charge => 'chg-demo-2',
                     deposit => $short_crypto, price => '300.00',
                     payments => [ [2, '250.00'] ],
                     timeline => [ ['NEW'], ['UNRESOLVED', 'UNDERPAID'] ]));

say_step('a card deposit through Adyen: a batch, each item signed');
$sb->psql("INSERT INTO mt5credit.provider_payload VALUES ('adyen', 'adyen')");
my $card = $sb->sql1("SELECT reference FROM mt5credit.create_deposit("
    . "'alice', 'button-press-0006', 'adyen', 'demo-live', 50001, 15000, "
    . "'USD')", user => 'portal');
print "  deposit $card (USD 150.00), automatic capture: an authorisation "
    . "is the payment\n";
my $auth = adyen_item(key => $adyen_key, code => 'AUTHORISATION',
                      ref => $card, value => 15000, psp => 'DEMO000000000001');
my $raised = adyen_item(key => $adyen_key, code => 'AUTHORISATION',
                        ref => $card, value => 15000, psp => 'DEMO000000000002');
$raised->{amount}{value} = 1500000;
my $report = adyen_item(key => $adyen_key, code => 'REPORT_AVAILABLE',
                        psp => 'DEMO000000000003');
show('AUTHORISATION + a forged item + a report',
     $sb->http('POST', '/webhooks/adyen',
               body => adyen_batch($auth, $raised, $report)));
show('Adyen retries, the forged item gone',
     $sb->http('POST', '/webhooks/adyen', body => adyen_batch($auth, $report)));

say_step('the return page (it can only read)');
my $st = $sb->psql("SELECT status, coalesce(credit_status, '-') FROM "
                   . "mt5credit.deposit_status('alice', '$dep')",
                   user => 'portal')->[0];
print "  alice's $dep: deposit $st->[0], credit $st->[1] "
    . "(the worker makes the MT5 deal)\n";

say_step('what PostgreSQL holds now');
print "  webhook events (raw bytes kept, unique per provider event id):\n";
printf "    %-8s %-26s %-32s %s\n", @$_ for
    [ 'provider', 'event id', 'type', 'what ingest() did' ],
    @{ $sb->psql("SELECT provider, provider_event_id, coalesce(event_type, "
                 . "'-'), disposition FROM mt5credit.webhook_event ORDER BY id") };

print "  credit intents (one per provider payment, pending for the worker):\n";
printf "    %-8s %-12s %-9s %-6s %-10s %s\n", @$_ for
    [ 'ref', 'payment', 'login', 'cur', 'amount', 'status' ],
    @{ $sb->psql("SELECT reference, provider_payment_id, mt5_login, currency,"
                 . " to_char(amount_minor / 100.0, 'FM999990.00'), status "
                 . "FROM mt5credit.mt5_credit ORDER BY id") };

print "  cases for a person:\n";
printf "    #%-3s %-28s %-6s %s\n", @$_ for
    @{ $sb->psql("SELECT id, kind, severity, left(details::text, 90) "
                 . "FROM mt5credit.case ORDER BY id") };

print "  wake-ups sent to Redis (credit ids): ",
    join(' ', split /\n/, $sb->redis_cli('LRANGE', 'mt5credit:wake', 0, -1)),
    "\n";

say_step('what the edge refused (nginx error log)');
for my $line (split /\n/, $sb->error_log) {
    next unless $line =~ /mt5_credit: webhook (rejected|case_opened)/;
    $line =~ s/^.*?mt5_credit: //;
    $line =~ s/, client: .*//;
    print "  $line\n";
}

say_step('counters (GET /status, Prometheus text)');
for my $line (split /\n/, $sb->http('GET', '/status')->{body}) {
    next if $line =~ /^#/ || $line =~ / 0$/;
    print "  $line\n";
}

say_step('the MT5 side: the Web API simulator over HTTPS, and the worker');
my $sim = Mt5Credit::Mt5Sim->new($sb);
$sim->add_group(group => 'real\\eur', currency => 'EUR', currency_digits => 2);
$sim->add_account(login => 50001, group => 'real\\usd', balance => '0.00',
                  credit => '0.00', rights => 1);
$sim->add_account(login => 50002, group => 'real\\eur', balance => '0.00',
                  credit => '0.00', rights => 1);
print "  simulator ", $sim->url, " (CA ", $sim->ca_file, ")\n";
# the provider's API, for payouts: a Stripe double on loopback
my $api_key = 'rk_demo_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 20);
my $api_port = Mt5Credit::Sandbox::free_port();
$sb->write_file('stripe-api.json', '{}');
$sb->spawn('stripesim', 'perl', "$Mt5Credit::Sandbox::ROOT/t/stripesim/"
           . 'stripesim.pl', $api_port, $sb->dir . '/stripe-api.json',
           $api_key);
Mt5Credit::Sandbox::wait_port($api_port, 'stripesim');
my $api_key_file = $sb->write_file('secrets/stripe-api', "$api_key\n");
chmod 0600, $api_key_file;
# the payout rail: a bank-transfer PSP's payout API (a double on loopback),
# paying EUR to beneficiary tokens; the schema owner lists what it pays
my $psp_key = 'psp_demo_' . join('', map { ('a' .. 'z')[rand 26] } 1 .. 20);
my $psp_port = Mt5Credit::Sandbox::free_port();
$sb->spawn('payoutsim', 'perl', "$Mt5Credit::Sandbox::ROOT/t/payoutsim/"
           . 'payoutsim.pl', $psp_port, $sb->dir . '/psp.json', $psp_key);
Mt5Credit::Sandbox::wait_port($psp_port, 'payoutsim');
my $psp_key_file = $sb->write_file('secrets/psp-api', "$psp_key\n");
chmod 0600, $psp_key_file;
$sb->psql("INSERT INTO mt5credit.payout_currency VALUES ('bank', 'EUR')");
my $report_dir = ($ENV{TMPDIR} || '/tmp') . '/mt5credit-demo-report';
mkdir $report_dir;
my $conf = Mt5Credit::Worker::config($sb, 'demo-worker',
    servers => [ [ 'demo-live', $sim,
                   recon_groups => 'real\\usd, real\\eur' ] ],
    recon_database => '"host=127.0.0.1 port=' . $sb->pg_port
                      . ' dbname=mt5credit user=recon"',
    recon_out => $report_dir,
    provider_api_url => "http://127.0.0.1:$api_port",
    provider_api_key_file => $api_key_file,
    payout_rail => 'generic', payout_provider => 'bank',
    payout_api_url => "http://127.0.0.1:$psp_port",
    payout_api_key_file => $psp_key_file);
Mt5Credit::Worker::start($sb, 'demo-worker', $conf);
Mt5Credit::Worker::wait_for(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
              . "WHERE status IN ('pending', 'claimed')") == 0 }, 30);

print "  credits now:\n";
printf "    %-8s %-9s %-6s %-10s %-8s %s\n", @$_ for
    [ 'ref', 'login', 'cur', 'amount', 'status', 'MT5 deal' ],
    @{ $sb->psql("SELECT reference, mt5_login, currency, "
                 . "to_char(amount_minor / 100.0, 'FM999990.00'), status, "
                 . "coalesce(mt5_deal_ticket::text, '-') "
                 . "FROM mt5credit.mt5_credit ORDER BY id") };

say_step('a full refund of the Stripe payment: a new record, one debit');
my $refund = stripe_event(type => 'charge.refunded', pi => 'pi_demo_1',
                          amount => 50000);
show('Stripe charge.refunded', $sb->http('POST', '/webhooks/stripe',
     body => $refund, headers => stripe_headers($stripe_secret, $refund)));
Mt5Credit::Worker::wait_for(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
              . "WHERE status IN ('pending', 'claimed')") == 0 }, 30);

print "  MT5's ledger (balance deals):\n";
printf "    %-8s %-7s %-10s %s\n", 'deal', 'login', 'profit', 'comment';
printf "    %-8s %-7s %-10s %s\n", @$_{qw(Deal Login Profit Comment)}
    for @{ $sim->ledger->{deals} };
print "  MT5 balances: ", join(', ', map { "$_->{login} $_->{balance}" }
                               @{ $sim->ledger->{accounts} }), "\n";
print "  history of credit 1: ", join(' ', map { "$_->[0]>$_->[1]" } @{ $sb->psql(
    "SELECT coalesce(from_status, '-'), to_status FROM "
    . "mt5credit.credit_history WHERE credit_id = 1 ORDER BY id") }), "\n";

say_step('a withdrawal of EUR 100.00 from 50002: two people, debit, payout');
my $wd = $sb->sql1("SELECT reference FROM mt5credit.withdrawal_request("
    . "'alice', 'demo-withdraw-1', 'bank', 'demo-live', 50002, 10000, 'EUR', "
    . "'bnf_demo_alice')", user => 'portal');
my $digest = $sb->sql1("SELECT mt5credit.withdrawal_prepare('$wd', "
                       . "'within limits')", user => 'ops_alice');
print "  $wd requested by alice, prepared by ops_alice (digest $digest)\n";
print "  its plan: ", join(', ', map { "$_->[0] $_->[1] $_->[2]" } @{ $sb->psql(
    "SELECT kind, amount_minor, currency FROM mt5credit.withdrawal_plan_show("
    . "'$wd')", user => 'ops_bob') }), " (the USD deposit came through acmepay,"
    . " which refunds nothing here: mt5credit.refund_window)\n";
my $self_ok = $sb->psql("SELECT mt5credit.withdrawal_approve('$wd', "
    . "'$digest', 'mine')", user => 'ops_alice', may_fail => 1, raw => 1);
print "  ops_alice approving it herself: ",
      ($self_ok =~ /(maker-checker[^\n]*)/)[0] // 'ALLOWED?!', "\n";
$sb->psql("SELECT mt5credit.withdrawal_approve('$wd', '$digest', 'ok')",
          user => 'ops_bob');
print "  ops_bob approves: the MT5 debit is queued in the same transaction\n";
Mt5Credit::Worker::wait_for(sub {
    $sb->sql1("SELECT count(*) FROM mt5credit.mt5_credit "
              . "WHERE status IN ('pending', 'claimed')") == 0 }, 30);
my ($payout_rc, $payout_log) = Mt5Credit::Worker::run($sb, 'payout', '-c',
                                                      $conf, '--once');
print map { "  $_\n" } grep { /(payout|refund) wd_/ } split /\n/, $payout_log;
printf "  %s\n", join(' | ', @$_) for @{ $sb->psql(
    "SELECT c.reference || ' ' || c.status, 'deal ' || c.mt5_deal_ticket, "
    . "'payout ' || p.status || ' ' || p.provider_payout_id, "
    . "'client sees: ' || mt5credit.withdrawal_progress('alice', "
    . "'$wd') FROM mt5credit.mt5_credit c JOIN mt5credit.payout p "
    . "ON p.debit_credit_id = c.id") };

say_step('the day closes: reconciliation of Stripe USD, today (UTC)');
# Stripe's settlement for the day: the payment, its refund (named by the
# refund's own id, paired by payment and amount), and a payment whose
# webhook never reached us (in transit: a case if no credit comes within
# the matching window); a dealer's manual bonus sits in MT5
$sim->manual_deal(login => 50001, amount => '25.00', comment => 'bonus');
my @day = (
    { id => 'txn_demo_1', category => 'charge', pi => 'pi_demo_1',
      source => 'ch_demo_1', gross => 50000, fee => 1480 },
    { id => 'txn_demo_2', category => 'refund', pi => 'pi_demo_1',
      source => 're_demo_1', gross => -50000 },
    { id => 'txn_demo_3', category => 'charge', pi => 'pi_demo_lost',
      source => 'ch_demo_lost', gross => 7500, fee => 248,
      deposit => 'dep_000404' },
);
my $settlement = $sb->write_file('stripe-settlement.csv',
    Mt5Credit::Settlement::stripe_csv(\@day));
my $control = $sb->write_file('stripe-payouts.csv',
    Mt5Credit::Settlement::control_csv(\@day));
my $today = POSIX::strftime('%Y-%m-%d', gmtime);
my ($recon_rc, $recon) = Mt5Credit::Worker::run($sb, 'reconcile', '-c', $conf,
    '--provider', 'stripe', '--day', $today, '--tz', 'UTC',
    '--currency', 'USD', '--format', 'stripe', '--settlement', $settlement,
    '--control', $control);
print map { "  $_\n" } grep { !/ INFO / } split /\n/, $recon;
print "  (exit $recon_rc: 1 means differences were found and are cases)\n";

say_step('a risk hold: a large deposit waits for two people before MT5');
my $desk = 'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit';
my ($risk_rc, $risk) = Mt5Credit::Worker::run($sb, 'risk', '--database',
    "$desk user=ops_alice", 'propose', 'credit_amount', '--currency', 'USD',
    '--limit', '1000.00', '--note', 'cards over 1,000 USD: looked at first');
print "  ops_alice: $risk";
my ($change) = $risk =~ /rule change (\d+)/ or die "demo: $risk";
($risk_rc, $risk) = Mt5Credit::Worker::run($sb, 'risk', '--database',
    "$desk user=ops_alice", 'approve', $change);
print "  ops_alice approving it herself: $risk";
($risk_rc, $risk) = Mt5Credit::Worker::run($sb, 'risk', '--database',
    "$desk user=ops_bob", 'approve', $change, '--note', 'agreed');
print "  ops_bob: $risk";
my $big = $sb->sql1("SELECT reference FROM mt5credit.create_deposit('alice', "
    . "'button-press-0009', 'stripe', 'demo-live', 50001, 250000, 'USD')",
    user => 'portal');
my $big_ev = stripe_event(deposit => $big, amount => 250000, pi => 'pi_demo_9');
show("Stripe: $big paid, USD 2,500.00", $sb->http('POST', '/webhooks/stripe',
     body => $big_ev, headers => stripe_headers($stripe_secret, $big_ev)));
my ($held, $held_ref, $why) = @{ $sb->psql("SELECT c.id, c.reference, "
    . "c.status || ': ' || (r->>'rule') || ', ' || (r->>'observed') || ' > ' "
    . "|| (r->>'limit_minor') || ' minor units' FROM mt5credit.mt5_credit c, "
    . "jsonb_array_elements(c.held_for) r WHERE c.provider_payment_id = "
    . "'pi_demo_9'")->[0] };
sleep 2;                            # the worker's rounds go on
my $deals = sub { scalar grep { ($_->{Comment} // '') =~ /\Q$held_ref\E$/ }
                  @{ $sim->ledger->{deals} } };
print "  credit $held $why; MT5 deals for it after the worker's rounds: ",
      $deals->(), "\n";
die "demo: a held credit reached MT5\n" if $deals->();
my $hold_case = $sb->sql1("SELECT id FROM mt5credit.case WHERE credit_id = "
                          . "$held AND kind = 'risk_hold'");
my ($hold_rc, $hold) = Mt5Credit::Worker::run($sb, 'cases', '--database',
    "$desk user=ops_alice", 'propose', $hold_case, '--action', 'release_hold',
    '--note', 'card statement received (KYC-77)');
print "  ops_alice: $hold";
my ($hp) = $hold =~ /proposal (\d+)/ or die "demo: $hold";
($hold_rc, $hold) = Mt5Credit::Worker::run($sb, 'cases', '--database',
    "$desk user=ops_bob", 'approve', $hp, '--note', 'checked');
print "  ops_bob: $hold";
Mt5Credit::Worker::wait_for(sub {
    $sb->sql1("SELECT status FROM mt5credit.mt5_credit WHERE id = $held")
        eq 'done' }, 30) or die "demo: the released credit was not made\n";
print "  credit $held released and made: MT5 deals for it now: ",
      $deals->(), "\n";

say_step('the case desk: what a person sees (mt5credit cases list)');
my ($cases_rc, $cases) = Mt5Credit::Worker::run($sb, 'cases', '--database',
    'host=127.0.0.1 port=' . $sb->pg_port . ' dbname=mt5credit user=ops_alice',
    'list');
print map { "  $_\n" } split /\n/, $cases;

say_step('mt5credit status');
my ($rc, $status) = Mt5Credit::Worker::run($sb, 'status', '-c', $conf);
print map { "  $_\n" } split /\n/, $status;

Mt5Credit::Worker::stop($sb, 'demo-worker');
$sb->stop_nginx;
my @problems = $sb->log_problems;
say_step(@problems ? "PROBLEMS:\n" . join("\n", @problems)
                   : 'done: servers stopped, no alerts in the log');
exit(@problems ? 1 : 0);
