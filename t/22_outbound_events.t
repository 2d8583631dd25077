#!/usr/bin/perl
#
# Outbound events (sql/095, batch/outbound/): what the broker's CRM hears,
# signed per Standard Webhooks and checked by a receiver built on the
# official `standardwebhooks` npm package (t/sdk/outbound_receiver.js).
# Impossible:
#   - a credited deposit, a refund, a case, a withdrawal's approval or
#     debit with no event, or with two; an event whose facts are not the
#     row's (login, amount, deal ticket)
#   - an event for a change that rolled back, or whose transaction died
#     with its server
#   - a delivery the official library does not verify
#   - an event lost while the receiver is down, or sent twice under two
#     ids; two events of one deposit with one sequence number, or a gap
#   - an event lost, or a second id made, when the sender is SIGKILLed or
#     PostgreSQL restarts mid-soak
#   - a failing delivery retried for ever, or exhausted without an alert;
#     an endpoint failing for outbound_disable_after still tried, or
#     disabled without an alert; its events lost while it is off
#   - a replay by one person that sends other bytes, or another id, or is
#     not recorded with who and why; a replay by the sender's credentials
#   - an endpoint that is gone collecting events for ever (retired by a
#     person, it gets none and leaves the backlog)
#   - a rotation with a gap: during the overlap a receiver with either
#     secret verifies; after it, one with only the new
#   - a redirect followed: a 3xx is a failed try
#   - a configuration that sends anywhere but https (or this machine), a
#     misspelled key, a weak secret, an endpoint named twice, a schedule
#     that is no schedule: each refused at start, saying what and where

use strict;
use warnings;

use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep time);
use POSIX qw(strftime);

use lib 't/lib';
use Mt5Credit::Provider qw(stripe_event);
use Mt5Credit::Stack;
use Mt5Credit::Worker;

my $NODE_PATH = "$Mt5Credit::Sandbox::ROOT/build/test-sdks/node_modules";
plan skip_all => 'make test-sdks first (the standardwebhooks package)'
    unless -d "$NODE_PATH/standardwebhooks" || $ENV{CI};

my $st = Mt5Credit::Stack->new;
my $sb = $st->sb;
$st->account(login => 72201, balance => '0.00');
$st->account(login => 72202, balance => '1000.00');

my $json = JSON::PP->new->canonical;

my $A = 'whsec_' . 'QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB';   # the first
my $B = 'whsec_' . 'QkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJC';   # its successor

# --- the receiver (the official library) ----------------------------------

my %receivers;

sub receiver_start {
    my ($name, %o) = @_;
    my $ready = $sb->dir . "/$name.ready";
    unlink $ready;
    my @secrets = map { ('--secret', $_) } @{ $o{secrets} || [$A] };
    $sb->spawn("receiver-$name", 'env', "NODE_PATH=$NODE_PATH", 'node',
               "$Mt5Credit::Sandbox::ROOT/t/sdk/outbound_receiver.js",
               '--port', $o{port} || 0, '--log', $sb->dir . "/$name.jsonl",
               '--ready', $ready, @secrets,
               ($o{status} ? ('--status', $o{status}) : ()));
    Mt5Credit::Worker::wait_for(sub { -s $ready }, 20)
        or BAIL_OUT("receiver $name did not start");
    open my $fh, '<', $ready or die;
    chomp(my $port = <$fh>);
    $receivers{$name} = $port;
    return $port;
}

sub receiver_stop { $sb->reap("receiver-$_[0]", 'TERM', 10) }

sub received {
    my ($name) = @_;
    open my $fh, '<', $sb->dir . "/$name.jsonl" or return [];
    return [ map { $json->decode($_) } grep { /\S/ } <$fh> ];
}

# --- the sender ------------------------------------------------------------

my $alerts = $sb->dir . '/alerts.txt';
my %secret_files;

sub secrets_file {
    my ($name, @secrets) = @_;
    my $f = $sb->write_file("$name.secrets", join('', map { "$_\n" } @secrets));
    chmod 0600, $f;
    return $secret_files{$name} = $f;
}

# the schedule and the disabling as short as the part of the test needs
my %patient = (outbound_retry => '"1s, 1s, 2s, 2s, 5s, 10s, 30s, 60s"',
               outbound_disable_after => 600);
my %brisk = (outbound_retry => '"1s, 1s"', outbound_disable_after => 4);

sub sender_config {
    my ($how, %endpoints) = @_;
    my $conf = $st->worker_config('out1',
        outbound_database => '"host=127.0.0.1 port=' . $sb->pg_port
                             . ' dbname=mt5credit user=outbound"',
        outbound_timeout => 2, outbound_interval => 1, outbound_batch => 5,
        alert_command => "echo \$MT5CREDIT_ALERT_KIND >> $alerts", %$how);
    open my $fh, '>>', $conf or die;
    for my $name (sort keys %endpoints) {
        print $fh "\n[endpoint $name]\nurl = $endpoints{$name}\n"
                . "secret_file = $secret_files{$name}\n";
    }
    close $fh;
    return $conf;
}

sub sender_start {
    my ($conf) = @_;
    Mt5Credit::Worker::start_cmd($sb, 'out1', 'outbound', $conf);
}

sub sender_log { $st->worker_log('out1') }

sub sql1 { $sb->sql1(@_) }

sub undelivered {
    my ($endpoint) = @_;
    return sql1("SELECT count(*) FROM mt5credit.outbound_delivery "
                . "WHERE endpoint = '$endpoint' AND status <> 'delivered'");
}

sub all_delivered {
    my ($endpoint, $timeout) = @_;
    return Mt5Credit::Worker::wait_for(sub { undelivered($endpoint) == 0 },
                                       $timeout || 60);
}

sub messages {
    my ($where) = @_;
    my $rows = $sb->psql("SELECT webhook_id, type, subject, seq, body FROM "
                         . "mt5credit.outbound_message "
                         . ($where ? "WHERE $where " : '') . "ORDER BY id");
    return [ map { { id => $_->[0], type => $_->[1], subject => $_->[2],
                     seq => $_->[3], body => $_->[4] } } @$rows ];
}

sub alerts_of {
    my ($kind) = @_;
    open my $fh, '<', $alerts or return 0;
    return scalar grep { /^\Q$kind\E$/ } <$fh>;
}

# the deliveries one receiver verified, by webhook-id; and every check
# that the deliveries it got are the messages, byte for byte
sub check_received {
    my ($name, $what) = @_;
    my $got = received($name);
    my %by_id;
    my ($bad, $unverified) = (0, 0);
    my %body = map { $_->{id} => $_->{body} } @{ messages() };
    for my $r (@$got) {
        $unverified++ unless grep { $_ } @{ $r->{verified} };
        $bad++ unless defined $body{ $r->{webhook_id} }
                      && $body{ $r->{webhook_id} } eq $r->{body};
        push @{ $by_id{ $r->{webhook_id} } }, $r;
    }
    ok(@$got > 0, "$what: deliveries arrived");
    is($unverified, 0, "$what: every delivery ("
       . scalar(@$got) . ") verified by the official library");
    is($bad, 0, "$what: every delivery is a message's body under its own "
       . 'webhook-id, byte for byte (a duplicate has an equal id)');
    return \%by_id;
}

# --- 1. the events, each in the transaction of its change -----------------

my $c1 = $st->pay(login => 72201, amount => 10000);
my $c2 = $st->pay(login => 72201, amount => 25000);
$st->start_worker('w1');
ok($st->wait_status($c1, 'done') && $st->wait_status($c2, 'done'),
   'two deposits credited');

my $m = messages("type = 'deposit.credited'");
is(scalar @$m, 2, 'two credited deposits: two deposit.credited events');
for my $c ($c1, $c2) {
    my ($ticket, $dep, $login, $amount) = @{ $sb->psql(
        "SELECT c.mt5_deal_ticket, d.reference, c.mt5_login, c.amount_minor "
        . "FROM mt5credit.mt5_credit c JOIN mt5credit.deposit d "
        . "ON d.id = c.deposit_id WHERE c.id = $c")->[0] };
    my ($e) = grep { $json->decode($_->{body})->{data}{deposit} eq $dep } @$m;
    my $d = $e ? $json->decode($e->{body})->{data} : {};
    is_deeply([ $d->{mt5_deal_ticket}, $d->{mt5_login}, $d->{amount_minor},
                $d->{currency}, $d->{sequence}, $e && $e->{seq} ],
              [ $ticket, $login, $amount, 'USD', 1, 1 ],
              "$dep: its deal ticket, login and amount in minor units, "
              . 'sequence 1');
}
like($m->[0]{id}, qr/^msg_[0-9a-f]{32}$/, 'a webhook-id is msg_ and a UUID');
like($m->[0]{body}, qr/^\{"data": \{.*\}, "type": "deposit\.credited", "timestamp": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"\}$/,
     'the body: type, timestamp and data (Standard Webhooks)');

# a refund of the first: the deposit's second event
$st->refund(of => $c1, amount => 4000);
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.outbound_message "
            . "WHERE type = 'deposit.refunded'") == 1 }, 30),
   'a refund made in MT5: one deposit.refunded event');
is_deeply([ map { "$_->{type}#$_->{seq}" } @{ messages(
              "subject = (SELECT subject FROM mt5credit.outbound_message "
              . "WHERE type = 'deposit.refunded')") } ],
          [ 'deposit.credited#1', 'deposit.refunded#2' ],
          'the deposit\'s events numbered 1, 2 in the order they happened');

# money for a deposit we do not have: a case, and its event
my $res = $st->webhook(stripe_event(deposit => 'dep_999999', amount => 700,
                                    pi => 'pi_out_unknown'));
is($res->{status}, 200, 'a payment for an unknown deposit is taken');
my ($case) = @{ messages("type = 'case.opened'") };
is($case && $json->decode($case->{body})->{data}{case_kind},
   'unknown_deposit', 'its case: a case.opened event');

# rolled back, and died with its server: no event
my $before = sql1('SELECT count(*) FROM mt5credit.outbound_message');
$sb->psql("BEGIN; SELECT mt5credit.open_case('outbound_rollback', 'low', "
          . "'outbound-rollback', '{}'); ROLLBACK;");
is(sql1('SELECT count(*) FROM mt5credit.outbound_message'), $before,
   'a case opened and rolled back: no event');
is(sql1("SELECT count(*) FROM mt5credit.\"case\" "
        . "WHERE kind = 'outbound_rollback'"), 0, '(and no case)');

# a withdrawal approved by two people, its MT5 debit made by the worker
my $wd = sql1("SELECT reference FROM mt5credit.withdrawal_request("
              . "'alice', 'out-wd-1', 'stripe', 'live1', 72202, 30000, "
              . "'USD', 'acct_out_1')", user => 'portal');
my $digest = sql1("SELECT mt5credit.withdrawal_prepare('$wd', 'ok')",
                  user => 'ops_alice');
$sb->psql("SELECT mt5credit.withdrawal_approve('$wd', '$digest', 'ok')",
          user => 'ops_bob');
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.outbound_message "
            . "WHERE type = 'withdrawal.debited'") == 1 }, 30),
   'a withdrawal\'s MT5 debit made: one withdrawal.debited event');
is_deeply([ map { "$_->{type}#$_->{seq}" }
            @{ messages("subject LIKE 'withdrawal:%'") } ],
          [ 'withdrawal.approved#1', 'withdrawal.debited#2' ],
          "$wd: approved, then debited, numbered in that order");
my ($wdm) = @{ messages("type = 'withdrawal.debited'") };
my $wdd = $json->decode($wdm->{body})->{data};
is_deeply([ @$wdd{qw(withdrawal mt5_login amount_minor direction)} ],
          [ $wd, 72202, 30000, 'debit' ], 'its facts: the request\'s');

# --- 2. delivered, verified -------------------------------------------------

secrets_file('crm', $A);
my $crm = receiver_start('crm');
my $conf = sender_config(\%patient,
                         crm => "http://127.0.0.1:$crm/hooks/mt5credit");

my ($rc, $out) = Mt5Credit::Worker::run($sb, 'outbound', '-c', $conf,
                                        '--once');
is($rc, 0, 'mt5credit outbound --once: exit 0') or diag($out);
my $n = sql1('SELECT count(*) FROM mt5credit.outbound_message');
is(sql1("SELECT count(*) FROM mt5credit.outbound_endpoint "
        . "WHERE name = 'crm'"), 1, 'the endpoint is registered');
is(sql1("SELECT count(*) FROM mt5credit.outbound_delivery d "
        . "JOIN mt5credit.outbound_message m ON m.id = d.message_id "
        . "WHERE d.endpoint = 'crm'"), 0,
   'an endpoint registered now has none of the events made before it');

# those earlier events are a replay away; by one person, recorded
my $t0 = sql1("SELECT to_char(min(created_at) AT TIME ZONE 'UTC', "
              . "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') "
              . "FROM mt5credit.outbound_message");
($rc, $out) = Mt5Credit::Worker::run($sb, 'outbox', 'replay', '--since',
    $t0, '--endpoint', 'crm', '--reason', 'a new CRM',
    '--database', 'host=127.0.0.1 port=' . $sb->pg_port
                  . ' dbname=mt5credit user=ops_alice');
is($rc, 0, 'outbox replay --since, by a person') or diag($out);
like($out, qr/since: $n deliveries queued/, "every event since: $n");
is(sql1("SELECT replayed_by || ':' || reason || ':' || deliveries FROM "
        . "mt5credit.outbound_replay ORDER BY id DESC LIMIT 1"),
   "ops_alice:a new CRM:$n", 'recorded: who, why, how many');
like($sb->psql("SELECT mt5credit.outbound_replay_since(now() - "
               . "interval '1 hour', NULL, 'me too')", user => 'outbound',
               may_fail => 1),
     qr/permission denied/, 'the sender\'s credentials cannot replay');

sender_start($conf);
ok(all_delivered('crm'), "all $n delivered");
my $by_id = check_received('crm', 'first delivery');
is(scalar(keys %$by_id), $n, 'each message arrived');
like(sender_log(), qr/delivered \(HTTP 204, try 1\)/,
     'the log says delivered, the status and the try');

# --- 3. the receiver down, then up ----------------------------------------

receiver_stop('crm');
my @more = map { $st->pay(login => 72201, amount => 1000 + $_) } 1 .. 6;
$st->refund(of => $more[0], amount => 500);
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.mt5_credit WHERE status = 'done'"
            . " AND id >= $more[0]") == 7 }, 60),
   'six deposits and a refund credited while the receiver is down');
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.outbound_attempt "
            . "WHERE outcome = 'failed'") >= 3 }, 30),
   'tries fail while it is down');
like(sender_log(), qr/try 1 failed: .*onnect.*; again in 1 s/,
     'a failed try says why and when again');
receiver_start('crm', port => $crm);
ok(all_delivered('crm', 90), 'up again: every event delivered');
$by_id = check_received('crm', 'after the outage');
my $n2 = sql1('SELECT count(*) FROM mt5credit.outbound_message');
is(scalar(keys %$by_id), $n2, "all $n2 messages arrived");

sub ordered {
    my ($by) = @_;
    my %seqs;
    for my $id (keys %$by) {
        my $d = $json->decode($by->{$id}[0]{body})->{data};
        push @{ $seqs{ $d->{subject} } }, $d->{sequence};
    }
    my $gaps = 0;
    for my $s (values %seqs) {
        my @sorted = sort { $a <=> $b } @$s;
        $gaps++ unless join(',', @sorted) eq join(',', 1 .. @sorted);
    }
    return ($gaps, scalar keys %seqs);
}
my ($gaps, $subjects) = ordered($by_id);
is($gaps, 0, "each of $subjects subjects: sequence 1..n, no gap and no "
   . 'number twice, once sorted');

# --- 4. exhausted, disabled, enabled ----------------------------------------

# a second endpoint that redirects (a 3xx is a failed try), and a third
# nobody listens on
my $redir = Mt5Credit::Sandbox::free_port();
$sb->spawn('redirector', 'perl', '-MIO::Socket::INET', '-e', <<'PERL', $redir);
my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $ARGV[0],
                              Listen => 5, ReuseAddr => 1) or die $!;
while (my $c = $s->accept) {
    my $buf = ''; 
    while (sysread($c, my $b, 65536)) { $buf .= $b; last if $buf =~ /\r\n\r\n/
        && length($buf) >= index($buf, "\r\n\r\n") + 4
           + ($buf =~ /content-length: (\d+)/i ? $1 : 0) }
    print $c "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:1/x\r\n"
           . "Content-Length: 0\r\nConnection: close\r\n\r\n";
    close $c;
}
PERL
Mt5Credit::Sandbox::wait_port($redir, 'redirector');
my $dead = Mt5Credit::Sandbox::free_port();
secrets_file('moved', $A);
secrets_file('dead', $A);
Mt5Credit::Worker::stop($sb, 'out1');
$conf = sender_config(\%brisk, crm => "http://127.0.0.1:$crm/hooks/mt5credit",
                      moved => "http://127.0.0.1:$redir/hooks",
                      dead => "http://127.0.0.1:$dead/hooks");
sender_start($conf);
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.outbound_endpoint "
            . "WHERE name IN ('moved', 'dead')") == 2 }, 20),
   'two more endpoints registered');
my $t1 = strftime('%Y-%m-%dT%H:%M:%SZ', gmtime(time - 1));
my $c9 = $st->pay(login => 72201, amount => 999);
ok($st->wait_status($c9, 'done'), 'one more deposit credited');
my ($m9) = @{ messages("type = 'deposit.credited' AND body LIKE '%\"amount_minor\": 999,%'") };
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.outbound_delivery d "
            . "JOIN mt5credit.outbound_message m ON m.id = d.message_id "
            . "WHERE m.webhook_id = '$m9->{id}' AND d.status = 'exhausted'")
       == 2 }, 60),
   'not delivered to the two: exhausted after the schedule');
is(sql1("SELECT string_agg(outcome || coalesce(':' || http_status, ''), ',' "
        . "ORDER BY attempt) FROM mt5credit.outbound_attempt a "
        . "JOIN mt5credit.outbound_message m ON m.id = a.message_id "
        . "WHERE m.webhook_id = '$m9->{id}' AND a.endpoint = 'moved'"),
   'failed:307,failed:307,exhausted:307',
   'three tries (the first and two retries), the redirect never followed');
is(sql1("SELECT status FROM mt5credit.outbound_delivery d "
        . "JOIN mt5credit.outbound_message m ON m.id = d.message_id "
        . "WHERE m.webhook_id = '$m9->{id}' AND d.endpoint = 'crm'"),
   'delivered', 'the working endpoint got it meanwhile');
ok(Mt5Credit::Worker::wait_for(sub { alerts_of('outbound_exhausted') >= 2 },
                               10), 'each exhausted delivery alerted');
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.outbound_endpoint WHERE "
            . "name IN ('moved', 'dead') AND disabled_at IS NOT NULL") == 2
       }, 30) || diag(sender_log()),
   'failing for outbound_disable_after: both disabled');
ok(Mt5Credit::Worker::wait_for(
       sub { alerts_of('outbound_endpoint_disabled') == 2 }, 10),
   'each alerted, once');

my $c10 = $st->pay(login => 72201, amount => 1010);
ok($st->wait_status($c10, 'done'), 'a deposit credited while they are off');
my ($m10) = @{ messages("type = 'deposit.credited' AND body LIKE '%\"amount_minor\": 1010,%'") };
sleep 3;
is(sql1("SELECT string_agg(endpoint || '=' || status || ':' || attempts, ',' "
        . "ORDER BY endpoint) FROM mt5credit.outbound_delivery d "
        . "JOIN mt5credit.outbound_message m ON m.id = d.message_id "
        . "WHERE m.webhook_id = '$m10->{id}'"),
   'crm=delivered:1,dead=pending:0,moved=pending:0',
   'a disabled endpoint is not tried; its event waits');

# the dead one fixed: it is the CRM's second receiver now
Mt5Credit::Worker::stop($sb, 'out1');
my $crm2 = receiver_start('crm2');
$conf = sender_config(\%patient,
                      crm => "http://127.0.0.1:$crm/hooks/mt5credit",
                      moved => "http://127.0.0.1:$redir/hooks",
                      dead => "http://127.0.0.1:$crm2/hooks");
sender_start($conf);
my $ops = 'host=127.0.0.1 port=' . $sb->pg_port
          . ' dbname=mt5credit user=ops_bob';
($rc, $out) = Mt5Credit::Worker::run($sb, 'outbox', 'enable', 'dead',
                                     '--database', $ops);
is($rc, 2, 'enable without a reason: refused (exit 2)');
($rc, $out) = Mt5Credit::Worker::run($sb, 'outbox', 'enable', 'dead',
    '--reason', 'receiver moved', '--database', $ops);
is($rc, 0, 'outbox enable dead') or diag($out);
ok(Mt5Credit::Worker::wait_for(sub {
       received('crm2') && grep { $_->{webhook_id} eq $m10->{id} }
                           @{ received('crm2') } }, 30),
   'enabled: the event that waited is delivered');
($rc, $out) = Mt5Credit::Worker::run($sb, 'outbox', 'replay', $m9->{id},
    '--endpoint', 'dead', '--reason', 'exhausted while it was down',
    '--database', $ops);
is($rc, 0, 'outbox replay of the exhausted one') or diag($out);
ok(Mt5Credit::Worker::wait_for(sub {
       grep { $_->{webhook_id} eq $m9->{id} } @{ received('crm2') } }, 30),
   'replayed: delivered');
my @twice = grep { $_->{webhook_id} eq $m9->{id} } @{ received('crm') };
my ($same) = grep { $_->{webhook_id} eq $m9->{id} } @{ received('crm2') };
is($same->{body}, $twice[0]{body}, 'the same bytes as the first delivery '
   . 'to the other endpoint, under the same id');
check_received('crm2', 'the second receiver');
($rc, $out) = Mt5Credit::Worker::run($sb, 'outbox', 'show', $m9->{id},
                                     '--database', $ops);
like($out, qr/"outcome": "exhausted"/, 'outbox show: every try, the '
     . 'exhausted one too');
like($out, qr/"reason": "exhausted while it was down"/,
     'outbox show: the replay and why');

# an endpoint that is gone: retired by a person, it gets no new event and
# leaves the backlog
($rc, $out) = Mt5Credit::Worker::run($sb, 'outbox', 'retire', 'moved',
    '--reason', 'the redirecting host is gone', '--database', $ops);
is($rc, 0, 'outbox retire moved') or diag($out);
my $c10b = $st->pay(login => 72201, amount => 1011);
ok($st->wait_status($c10b, 'done'), 'a deposit credited after it');
is(sql1("SELECT string_agg(d.endpoint, ',' ORDER BY d.endpoint) FROM "
        . "mt5credit.outbound_delivery d JOIN mt5credit.outbound_message m "
        . "ON m.id = d.message_id WHERE m.type = 'deposit.credited' AND "
        . "m.body LIKE '%\"amount_minor\": 1011,%'"), 'crm,dead',
   'a retired endpoint gets no delivery of a new event');
is(sql1("SELECT count(*) FROM mt5credit.outbound_backlog() "
        . "WHERE endpoint = 'moved'"), 0, '... and is not in the backlog');

# --- 5. a rotation ----------------------------------------------------------

Mt5Credit::Worker::stop($sb, 'out1');
receiver_stop('crm');
unlink $sb->dir . '/crm.jsonl';
receiver_start('crm', port => $crm, secrets => [ $A, $B ]);
secrets_file('crm', $B, $A);                       # B new, A still signs
sender_start($conf);
my $c11 = $st->pay(login => 72201, amount => 1111);
ok($st->wait_status($c11, 'done') && all_delivered('crm'),
   'during the overlap: delivered');
my $r = received('crm');
ok(@$r > 0, 'during the overlap: deliveries arrived');
is_deeply([ map { join ',', map { $_ ? 1 : 0 } @{ $_->{verified} } } @$r ],
          [ ('1,1') x @$r ],
          'during the overlap every delivery verifies with the old secret '
          . 'alone and with the new alone');
like($r->[0]{webhook_signature}, qr/^v1,\S{44} v1,\S{44}$/,
     'two signatures, a space between');

Mt5Credit::Worker::stop($sb, 'out1');
unlink $sb->dir . '/crm.jsonl';
secrets_file('crm', $B);                           # the overlap is over
sender_start($conf);
my $c12 = $st->pay(login => 72201, amount => 1212);
ok($st->wait_status($c12, 'done') && all_delivered('crm'),
   'after it: delivered');
$r = received('crm');
ok(@$r > 0, 'after it: deliveries arrived');
is_deeply([ map { join ',', map { $_ ? 1 : 0 } @{ $_->{verified} } } @$r ],
          [ ('0,1') x @$r ],
          'after it: verified by the new secret, no longer by the old');

# --- 6. SIGKILL of the sender, a PostgreSQL restart, during a soak ----------

my $open = $sb->psql_session;
$open->send("BEGIN; SELECT mt5credit.open_case('outbound_died', 'low', "
            . "'outbound-died', '{}');");
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM pg_stat_activity WHERE state = "
            . "'idle in transaction' AND query LIKE '%outbound_died%'") == 1
       }, 10), 'a transaction has opened a case, and not committed');
my $paid = 0;
for my $round (1 .. 3) {
    $st->pay(login => 72201, amount => 2000 + $round * 10 + $_) for 1 .. 4;
    $paid += 4;
    sleep 0.5;
    Mt5Credit::Worker::kill9($sb, 'out1');
    sender_start($conf);
    if ($round == 2) {
        $sb->stop_postgres('fast');
        $sb->start_postgres;
        $open->close;
    }
}
ok(Mt5Credit::Worker::wait_for(sub {
       sql1("SELECT count(*) FROM mt5credit.mt5_credit "
            . "WHERE status = 'done' AND amount_minor BETWEEN 2011 AND 2034")
       == $paid }, 90), "$paid more deposits credited through the kills "
   . 'and the restart');
ok(all_delivered('crm', 120), 'every event delivered after them');
is(sql1("SELECT count(*) FROM mt5credit.\"case\" WHERE kind = "
        . "'outbound_died'") + sql1("SELECT count(*) FROM "
        . "mt5credit.outbound_message WHERE body LIKE '%outbound_died%'"), 0,
   'a transaction that died with its server left no case and no event');
is(sql1("SELECT count(*) FROM mt5credit.mt5_credit c WHERE c.status = "
        . "'done' AND c.kind = 'deposit' AND (SELECT count(*) FROM "
        . "mt5credit.outbound_message m WHERE m.type = 'deposit.credited' "
        . "AND m.body LIKE '%\"credit\": \"' || c.reference || '\"%') <> 1"),
   0, 'every credited deposit has exactly one deposit.credited event');
is(sql1("SELECT count(*) FROM mt5credit.outbound_message m WHERE m.type = "
        . "'deposit.credited' AND NOT EXISTS (SELECT 1 FROM "
        . "mt5credit.mt5_credit c WHERE c.status = 'done' AND m.body LIKE "
        . "'%\"credit\": \"' || c.reference || '\"%')"), 0,
   'and no deposit.credited event is of a credit not done');
$by_id = check_received('crm', 'after the soak');
my @soak = grep { $json->decode($_->{body})->{data}{amount_minor} // 0 }
           map { @$_ } values %$by_id;
my %ids = map { $_->{id} => 1 } @{ messages(
    "created_at > (SELECT created_at FROM mt5credit.outbound_message "
    . "WHERE type = 'deposit.credited' AND body LIKE "
    . "'%\"amount_minor\": 1212,%')") };
my @missing = grep { !$by_id->{$_} } keys %ids;
is(scalar @missing, 0, 'no event of the soak missing at the receiver ('
   . scalar(keys %ids) . ')');
($gaps, $subjects) = ordered($by_id);
is($gaps, 0, 'each subject\'s sequence has no gap, and no number twice');

# --- 7. a bad configuration: said, with where, and nothing sent ------------

sub refused_config {
    my ($text, $what, $like) = @_;
    my $good = do { open my $fh, '<', $conf or die; local $/; <$fh> };
    # a code: what it makes of the good file; text: appended to it
    my $f = $sb->write_file('bad-outbound.conf',
                            ref $text ? $text->($good) : $good . $text);
    my ($code, $said) = Mt5Credit::Worker::run($sb, 'outbound', '-c', $f,
                                               '--once');
    is($code, 2, "$what: refused (exit 2)");
    like($said, $like, "... saying $what");
}
refused_config("\n[endpoint evil]\nurl = http://localhost:1\@elsewhere.example/"
               . "\nsecret_file = $secret_files{crm}\n",
               'plain HTTP to another host', qr/\[endpoint evil\] url must be https/);
refused_config("\n[endpoint typo]\nurl = https://crm.example/\nsecret = x\n",
               'a key an endpoint has not', qr/bad-outbound\.conf:\d+: unknown key "secret"/);
my $short = secrets_file('short', 'whsec_c2hvcnQ=');
refused_config("\n[endpoint short]\nurl = https://crm.example/\n"
               . "secret_file = $short\n", 'a secret of 5 bytes',
               qr/short\.secrets:1: a key of 5 bytes/);
refused_config("\n[endpoint crm]\nurl = https://crm.example/\n"
               . "secret_file = $short\n", 'an endpoint named twice',
               qr/endpoint "crm" is duplicate/);
refused_config(sub { $_[0] =~ s/^outbound_retry = .*$/outbound_retry = "5s, soon"/mr },
               'a retry that is no duration',
               qr/outbound_retry: "soon" is not a duration/);

# --- 8. what the sender may do, proven from the catalogue ------------------

is(sql1("SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM "
        . "pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        . "WHERE n.nspname = 'mt5credit' AND "
        . "has_function_privilege('outbound', p.oid, 'EXECUTE')"),
   'deployment_tag,outbound_backlog,outbound_claim,outbound_delivered,'
   . 'outbound_disable_failing,outbound_endpoint_register,outbound_failed,'
   . 'outbound_release,outbound_sweep',
   'the sender\'s login may run its own functions and the deployment '
   . 'check, nothing else');
is(sql1("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON "
        . "n.oid = c.relnamespace WHERE n.nspname = 'mt5credit' AND "
        . "c.relkind = 'r' AND has_table_privilege('outbound', c.oid, "
        . "'SELECT, INSERT, UPDATE, DELETE')"), 0,
   'and may read or write no table');
like($sb->psql("UPDATE mt5credit.outbound_message SET body = '{}'",
               may_fail => 1), qr/never changed/,
     'a message is never changed, even by the owner');
like($sb->psql("DELETE FROM mt5credit.outbound_attempt", may_fail => 1),
     qr/append-only/, 'the tries are never deleted');

Mt5Credit::Worker::stop($sb, 'out1');
unlike(sender_log(), qr/whsec_/, 'no secret in the sender\'s log');

done_testing;
