#!/usr/bin/perl
#
# The MT5 Web API client (batch/mt5/mc_mt5.c) against the simulator
# (build/t/mt5sim), through build/t/mc_mt5_client_test: one process is one
# session, its steps run in order, one JSON line per step.  Impossible:
#   - a trade/balance sent twice: when the server executes and drops the
#     connection, libcurl's re-send on a new connection is refused (its
#     error says so); one request, one execution, one connection, one deal
#   - a timed-out or dropped balance call reported as anything but "no
#     answer", or re-sent; a drop before execution making a deal
#   - a server that fails the mutual check (cli_rand_answer) trusted; a
#     403, garbage or timeout leaving the session in use: the next call
#     authenticates on a new connection; a connection the server closed
#     while idle used for a balance call
#   - an answer about another login (user/get, user/account/get, a deal of
#     a page) taken as the answer asked for
#   - a short deal list: a page short or empty, or a total too low, is
#     "no answer", never fewer deals; 250 deals come back complete over
#     3 pages, each deal exactly as in the ledger
#   - "Total"/"total", "Time"/"time" read one way only
#   - a trade's Volume (1/10000 lot) lost or mixed up: a buy and a sell
#     listed with their own, a balance deal with 0
#   - money through a float: Profit, Balance, Credit exact to the cent,
#     JPY with 0 digits; no float, double or strtod in the sources
#   - a comment or amount the server might mangle sent at all (nothing
#     leaves the process); a non-final retcode taken as final; an auth
#     refusal read as the command's own retcode
#   - an unverified certificate accepted by default
#   - the password or its hash in an error text
#
# MC_MT5_CLIENT_TEST=/path/to/binary runs another build of the driver
# (under valgrind, say).

use strict;
use warnings;
use utf8;

use Encode qw(decode encode);
use JSON::PP;
use Test::More;
use Time::HiRes qw(sleep);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Mt5Sim;

my $ROOT = $Mt5Credit::Sandbox::ROOT;
my $BIN = $ENV{MC_MT5_CLIENT_TEST} || "$ROOT/build/t/mc_mt5_client_test";
die "$BIN is missing: build it first (make unit)\n" unless -x $BIN;

my $JSON = JSON::PP->new->utf8->canonical;
my $FAR = 4102444800;          # 2100-01-01: every deal's server time
my @ALL_OUTPUT;                # every line, for the secrets check

my $sb = Mt5Credit::Sandbox->new;
my $sim = Mt5Credit::Mt5Sim->new($sb);
my $pwfile = $sb->write_file('mt5.pw', "Password1\n");

# Runs the client with %$o over @steps; returns the step results.
sub client {
    my ($s, $o, @steps) = @_;
    my @cmd = ($BIN, '--url', $s->url,
               '--manager', $o->{manager} // $s->manager,
               '--password-file', $o->{password_file} // $pwfile,
               '--timeout-ms', $o->{timeout_ms} // 3000,
               '--connect-timeout-ms', 2000);
    push @cmd, '--ca', $s->ca_file unless $o->{no_ca};
    push @cmd, '--insecure' if $o->{insecure};
    push @cmd, '--ping', $o->{ping} if $o->{ping};
    open my $fh, '-|', @cmd, @steps or die "$BIN: $!";
    my @lines = <$fh>;
    close $fh;
    die "$BIN exited with $?: @lines" if $?;
    push @ALL_OUTPUT, @lines;
    return map { $JSON->decode($_) } @lines;
}

# a fresh start for one scenario: no faults, zero counters
sub fresh {
    my ($s) = @_;
    $s->clear_faults;
    $s->reset_stats;
}

sub ep_requests { $_[0]{endpoints}{$_[1]}{requests} }

sub deals_with_comment {
    my ($s, $comment) = @_;
    return [ grep { $_->{Comment} eq $comment } @{ $s->ledger->{deals} } ];
}

# --- handshake ------------------------------------------------------------

fresh($sim);
my ($r) = client($sim, {}, 'ensure');
is($r->{rc}, 'OK', 'handshake: ensure is OK');
is($r->{error}, '', 'and no error');
my $st = $sim->stats;
is($st->{auth_ok}, 1, 'the server authenticated one session');
is($st->{connections_opened}, 1, 'on one connection');
is(ep_requests($st, '/api/quit'), 1, 'closing the session sends /api/quit');

{
    $sim->add_manager(login => 1001, password => 'Pässwörd€1',
                      accountant => JSON::PP::true, groups => ['real\\*']);
    my $pw = $sb->write_file('mt5-utf8.pw',
                             encode('UTF-8', "Pässwörd€1\n"));
    my @r = client($sim, { manager => 1001, password_file => $pw },
                   'ensure', 'user,70001');
    is($r[0]{rc}, 'OK', 'a non-ASCII password (UTF-16LE hashed) works');
    is($r[1]{rc}, 'OK', 'and the session is usable');
}

{
    my $bad = $sb->write_file('wrong.pw', "Password2\n");
    fresh($sim);
    my @r = client($sim, { password_file => $bad }, 'ensure', 'user,70001');
    is_deeply([ @{ $r[0] }{qw(rc retcode)} ], [ 'REJECTED', 1001 ],
              'a wrong password: ensure is REJECTED 1001');
    is_deeply([ @{ $r[1] }{qw(rc retcode)} ], [ 'NO_ANSWER', 0 ],
              'a command on it is NO_ANSWER, not the auth retcode');
    is(ep_requests($sim->stats, '/api/user/get'), 0, 'and is not sent');
}

fresh($sim);
$sim->fault(kind => 'bad_cli_rand');
my @r = client($sim, {}, 'ensure', 'user,70001');
is($r[0]{rc}, 'NO_ANSWER', 'bad cli_rand_answer: NO_ANSWER');
like($r[0]{error},
     qr/server failed mutual authentication \(cli_rand_answer\)/,
     'naming the failed mutual authentication');
is($r[1]{rc}, 'OK', 'the next call authenticates again');
$st = $sim->stats;
is($st->{connections_opened}, 2, 'on a new connection: the first was closed');
is(ep_requests($st, '/api/user/get'), 1,
   'nothing was sent on the untrusted one');

# --- TLS ------------------------------------------------------------------

fresh($sim);
@r = client($sim, { no_ca => 1 }, 'ensure');
is($r[0]{rc}, 'NO_ANSWER', 'a certificate from an unknown CA is refused');
like($r[0]{error}, qr/certificate|SSL/i, 'with the TLS error');
is($sim->stats->{auth_ok}, 0, 'before any authentication');

@r = client($sim, { no_ca => 1, insecure => 1 }, 'ensure');
is($r[0]{rc}, 'OK', 'tls_verify 0 connects anyway');
like($r[0]{error}, qr/TLS verification is off/,
     'and mc_mt5_error() says verification is off');

# --- balance --------------------------------------------------------------

fresh($sim);
@r = client($sim, {}, 'ensure', 'balance,70001,2,64.25,dep:t41-ok',
            "deals,70001,0,$FAR", 'user,70001', 'account,70001');
is($r[1]{rc}, 'OK', 'balance: OK');
ok($r[1]{ticket} > 0, "with a deal ticket ($r[1]{ticket})");
my $d = deals_with_comment($sim, 'dep:t41-ok');
is(scalar @$d, 1, 'the ledger has exactly one deal with the comment');
is($d->[0]{Deal}, $r[1]{ticket}, 'the ticket returned is that deal');
is($d->[0]{Profit}, '64.25', 'its Profit is 64.25');
is($d->[0]{Action}, '2', 'a balance deal');
my ($mine) = grep { $_->{comment} eq 'dep:t41-ok' } @{ $r[2]{deals} };
is_deeply($mine, { deal => $r[1]{ticket}, login => '70001', action => 2,
                   profit => '64.25', volume => '0', comment => 'dep:t41-ok',
                   time => $d->[0]{Time} + 0 },
          'the client lists it exactly, Profit exact');
is($r[3]{balance}, '64.25', 'user/get Balance exact');
is($r[3]{group}, 'real\\usd', 'user/get Group with its backslash');
is($r[4]{margin_free}, '64.25', 'user/account/get MarginFree exact');

# deal/get, the settle check's one-deal fetch (sql/033)
@r = client($sim, {}, "deal,$r[1]{ticket}", 'deal,987654321');
is_deeply($r[0]{deal}, $mine, 'deal/get: the one deal, exactly as listed');
is_deeply([ @{ $r[1] }{qw(rc retcode)} ], [ 'REJECTED', 13 ],
          'deal/get of a ticket MT5 does not have: 13, not found');
$sim->fault(kind => 'wrong_login', endpoint => '/api/deal/get');
@r = client($sim, {}, "deal,$d->[0]{Deal}");
is($r[0]{rc}, 'OK', 'deal/get answered about another login: still the deal');
isnt($r[0]{deal}{login}, '70001', '... on the login the answer names, for '
     . 'the caller to compare');
$sim->clear_faults;

# trades: the volume traded since a deposit is read from these
{
    $sim->add_account(login => 70040, group => 'real\\usd',
                      balance => '0.00');
    my $buy = $sim->post('/control/trade', { login => 70040, action => 0,
                                             volume => 15000 });
    my $sell = $sim->post('/control/trade', { login => 70040, action => 1,
                                              volume => 7 });
    @r = client($sim, {}, 'balance,70040,2,10.00,dep:t41-trades',
                "deals,70040,0,$FAR", "deal,$buy->{ticket}");
    is_deeply([ map { "$_->{action}:$_->{volume}:$_->{profit}" }
                sort { $a->{deal} <=> $b->{deal} } @{ $r[1]{deals} } ],
              [ '0:15000:0.00', '1:7:0.00', '2:0:10.00' ],
              'deal/get_page: a buy and a sell with their Volume, the '
              . 'deposit with 0');
    is_deeply([ @{ $r[2]{deal} }{qw(deal action volume)} ],
              [ $buy->{ticket}, 0, '15000' ], 'deal/get: the same Volume');
}

@r = client($sim, {}, 'group,real\\usd', 'group,real\\jpy');
is_deeply([ @{ $r[0] }{qw(rc currency digits)} ], [ 'OK', 'USD', 2 ],
          'group/get: USD, 2 digits');
is_deeply([ @{ $r[1] }{qw(rc currency digits)} ], [ 'OK', 'JPY', 0 ],
          'group/get: JPY, 0 digits');

@r = client($sim, {}, 'balance,70003,2,1500,dep:t41-jpy', 'user,70003');
is($r[1]{balance}, '1500', 'a JPY deposit and balance, 0 digits');

# --- the dangerous one: executed, then the connection dropped -------------

fresh($sim);
$sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
@r = client($sim, {}, 'ensure', 'balance,70001,2,10.00,dep:t41-drop-after');
is($r[1]{rc}, 'NO_ANSWER', 'drop_after: NO_ANSWER');
is($r[1]{ticket}, '0', 'no ticket');
like($r[1]{error}, qr/wanted a new connection/,
     'libcurl tried to re-send on a new connection, and was refused');
$st = $sim->stats;
is(ep_requests($st, '/api/trade/balance'), 1, 'one trade/balance request');
is($st->{endpoints}{'/api/trade/balance'}{executed}, 1, 'executed once');
is($st->{connections_opened}, 1, 'no second socket during the call');
is(scalar @{ deals_with_comment($sim, 'dep:t41-drop-after') }, 1,
   'exactly one deal in the ledger');
@r = client($sim, {}, "deals,70001,0,$FAR");
is(scalar(grep { $_->{comment} eq 'dep:t41-drop-after' }
           @{ $r[0]{deals} }), 1,
   'and a new session finds it by comment (the recovery path)');

fresh($sim);
$sim->fault(kind => 'drop_before', endpoint => '/api/trade/balance');
@r = client($sim, {}, 'ensure', 'balance,70001,2,10.00,dep:t41-drop-before');
is($r[1]{rc}, 'NO_ANSWER', 'drop_before: NO_ANSWER');
$st = $sim->stats;
is(ep_requests($st, '/api/trade/balance'), 1, 'one request');
is($st->{endpoints}{'/api/trade/balance'}{executed}, 0, 'not executed');
is($st->{connections_opened}, 1, 'no second socket');
is(scalar @{ deals_with_comment($sim, 'dep:t41-drop-before') }, 0,
   'zero deals');

fresh($sim);
$sim->fault(kind => 'latency', endpoint => '/api/trade/balance', ms => 1500);
@r = client($sim, { timeout_ms => 500 }, 'ensure',
            'balance,70001,2,10.00,dep:t41-slow');
is($r[1]{rc}, 'NO_ANSWER', 'a reply slower than timeout_ms: NO_ANSWER');
like($r[1]{error}, qr/timed out/i, 'a timeout');
sleep 1.7;
$st = $sim->stats;
is(ep_requests($st, '/api/trade/balance'), 1, 'sent once, never again');
is(scalar @{ deals_with_comment($sim, 'dep:t41-slow') }, 1,
   'the server executed it anyway: the outcome was unknown, not failed');

# --- the deadline: never written after it, never running past it ----------

fresh($sim);
@r = client($sim, {}, 'ensure', 'balance_live,70001,2,10.00,dep:t41-late,1,-1');
is($r[1]{rc}, 'NOT_SENT', 'a deadline already passed: NOT_SENT');
like($r[1]{error}, qr/deadline passed before the request was written/,
     '... refused by the pre-request check, before a byte left');
$st = $sim->stats;
is(ep_requests($st, '/api/trade/balance'), 0,
   '... the server never received trade/balance');
is(scalar @{ deals_with_comment($sim, 'dep:t41-late') }, 0, '... no deal');

fresh($sim);
$sim->fault(kind => 'latency', endpoint => '/api/trade/balance', ms => 1500);
@r = client($sim, { timeout_ms => 5000 }, 'ensure',
            'balance_live,70001,2,10.00,dep:t41-bound,1,400');
is($r[1]{rc}, 'NO_ANSWER', 'a call longer than its deadline: NO_ANSWER '
   . '(it was sent: the outcome is unknown)');
my ($waited) = ($r[1]{error} // '') =~ /timed out after (\d+) milli/;
ok(defined $waited && $waited < 1000,
   '... the transfer was cut at the deadline, not at timeout_ms ('
   . ($waited // 'no timeout') . ' ms)');
sleep 1.5;

fresh($sim);
@r = client($sim, {}, 'balance_live,70001,2,10.00,dep:t41-nosession');
is($r[0]{rc}, 'NOT_SENT', 'no session: the balance call never makes one');
like($r[0]{error}, qr/never connects or authenticates/, '... and says so');
is($sim->stats->{connections_opened}, 0, '... not even a connection');

{
    # the server closes a connection idle for 1 s: the call is not sent on
    # it, and no new session is made for it
    my $i = Mt5Credit::Mt5Sim->new($sb, name => 'mt5simD', idle_timeout => 1);
    @r = client($i, {}, 'ensure', 'sleep,2500',
                'balance_live,70001,2,1.00,dep:t41-lost');
    is($r[2]{rc}, 'NOT_SENT', 'a session lost before the call: NOT_SENT');
    $st = $i->stats;
    is(ep_requests($st, '/api/trade/balance'), 0, '... nothing sent');
    is($st->{connections_opened}, 1, '... and no re-login for it');
    $i->stop;
}

fresh($sim);
$sim->fault(kind => 'hang', endpoint => '/api/user/get');
@r = client($sim, { timeout_ms => 700 }, 'user,70001', 'user,70001');
is($r[0]{rc}, 'NO_ANSWER', 'a hung server: NO_ANSWER after timeout_ms');
is($r[1]{rc}, 'OK', 'the next call works');
is($sim->stats->{connections_opened}, 2, 'on a new connection');
$sim->clear_faults;

# --- retcodes -------------------------------------------------------------

fresh($sim);
$sim->fault(kind => 'retcode', endpoint => '/api/trade/balance',
            retcode => '10019 Not enough money');
$sim->fault(kind => 'retcode', endpoint => '/api/trade/balance',
            retcode => '2 Common error');
@r = client($sim, {}, 'balance,70001,2,1.00,dep:t41-rc1',
            'balance,70001,2,1.00,dep:t41-rc2',
            'balance,70002,2,-5.00,dep:t41-nomoney',
            'balance,70001,2,1000000001.00,dep:t41-max',
            'balance,79999,2,1.00,dep:t41-nologin', 'user,70001');
is_deeply([ @{ $r[0] }{qw(rc retcode final)} ],
          [ 'REJECTED', 10019, JSON::PP::true ],
          'retcode 10019: REJECTED, final');
is_deeply([ @{ $r[1] }{qw(rc retcode final)} ],
          [ 'REJECTED', 2, JSON::PP::false ],
          'retcode 2: REJECTED, not final (outcome unknown)');
is_deeply([ @{ $r[2] }{qw(rc retcode final)} ],
          [ 'REJECTED', 10019, JSON::PP::true ],
          'a real withdrawal over the balance: 10019, final');
is_deeply([ @{ $r[3] }{qw(rc retcode final)} ],
          [ 'REJECTED', 4005, JSON::PP::true ],
          'over 1e9: 4005, final');
is_deeply([ @{ $r[4] }{qw(rc retcode final)} ],
          [ 'REJECTED', 13, JSON::PP::true ], 'an unknown login: 13, final');
is($r[5]{rc}, 'OK', 'a rejection leaves the session usable');
$st = $sim->stats;
is($st->{connections_opened}, 1, 'on the same connection');
is($st->{endpoints}{'/api/trade/balance'}{executed}, 0, 'nothing executed');

fresh($sim);
@r = client($sim, {}, map { "balance_live,70001,$_" }
            '2,1.00,bad+comment', '2,1.00,' . ('x' x 32), '2,1.00,dep t41',
            '2,1.00,', '2,1e3,dep:t41-exp', '2,1.2.3,dep:t41-dots',
            '2,.5,dep:t41-dot', '7,1.00,dep:t41-7', '2,1.00,dep:t41-cm,2');
is(scalar(grep { $_->{rc} eq 'REJECTED' && $_->{retcode} == 3
                 && $_->{error} =~ /not sent/ } @r), 9,
   'a bad comment, amount, type or check_margin: REJECTED 3, not sent');
is($sim->stats->{connections_opened}, 0, 'not even a connection was made');

# --- session loss ---------------------------------------------------------

fresh($sim);
$sim->fault(kind => 'http403', endpoint => '/api/user/get');
@r = client($sim, {}, 'ensure', 'user,70001', 'ensure', 'user,70001');
is($r[1]{rc}, 'NO_ANSWER', 'HTTP 403: NO_ANSWER');
like($r[1]{error}, qr/HTTP 403/, 'saying 403');
is($r[2]{rc}, 'OK', 'ensure authenticates again');
is($r[3]{rc}, 'OK', 'and the session works');
$st = $sim->stats;
is($st->{connections_opened}, 2, 'on a new connection');
is($st->{auth_ok}, 2, 'with a new handshake');

fresh($sim);
$sim->fault(kind => 'garbage', endpoint => '/api/user/get');
@r = client($sim, {}, 'user,70001', 'user,70001');
is($r[0]{rc}, 'NO_ANSWER', 'an unparseable body: NO_ANSWER');
is($r[1]{rc}, 'OK', 'then a new session');
is($sim->stats->{connections_opened}, 2, 'on a new connection');

# --- answers about another login ------------------------------------------

for my $ep (qw(/api/user/get /api/user/account/get /api/deal/get_page)) {
    fresh($sim);
    $sim->fault(kind => 'wrong_login', endpoint => $ep);
    my $step = $ep eq '/api/user/get' ? 'user,70001'
             : $ep eq '/api/deal/get_page' ? "deals,70001,0,$FAR"
             : 'account,70001';
    @r = client($sim, {}, $step);
    is($r[0]{rc}, 'NO_ANSWER', "wrong_login on $ep: NO_ANSWER");
    like($r[0]{error}, qr/answer names login 70002, asked about 70001/,
         'naming both logins');
}

# --- deals: paging and completeness ---------------------------------------

$sim->add_account(login => 70010, group => 'real\\usd', balance => '0.00');
fresh($sim);
@r = client($sim, {}, map { sprintf 'balance,70010,2,%d.%02d,pg:%03d',
                            $_, $_ % 100, $_ } 1 .. 250);
is(scalar(grep { $_->{rc} eq 'OK' } @r), 250, '250 deposits on one login');

fresh($sim);
@r = client($sim, {}, "deals,70010,0,$FAR");
is($r[0]{rc}, 'OK', 'deals over 250: OK');
is($r[0]{n}, 250, 'all 250');
$st = $sim->stats;
is(ep_requests($st, '/api/deal/get_total'), 1, 'one get_total');
is(ep_requests($st, '/api/deal/get_page'), 4,
   'three pages (100, 100, 50) and one look past the end');
{
    my %ledger = map { $_->{Deal} => $_ } @{ $sim->deals_of(70010) };
    my %seen;
    my $same = grep {
        my $l = $ledger{ $_->{deal} };
        !$seen{ $_->{deal} }++ && $l && $l->{Profit} eq $_->{profit}
            && $l->{Comment} eq $_->{comment} && $_->{login} eq '70010'
            && $_->{action} == 2 && $_->{volume} eq $l->{Volume}
    } @{ $r[0]{deals} };
    is($same, 250, 'each deal once, exactly as in the ledger');
    is(scalar keys %ledger, 250, 'and the ledger has no other');
}

for my $f (qw(partial_page empty_page bad_total)) {
    fresh($sim);
    $sim->fault(kind => $f);
    @r = client($sim, {}, "deals,70010,0,$FAR", "deals,70010,0,$FAR");
    is_deeply([ @{ $r[0] }{qw(rc n)} ], [ 'NO_ANSWER', 0 ],
              "$f: NO_ANSWER, never a short list");
    like($r[0]{error}, qr/incomplete deal list/, 'an incomplete deal list');
    is($r[1]{n}, 250, 'the next listing is complete again');
}

@r = client($sim, {}, "deals,70002,0,$FAR");
is_deeply([ @{ $r[0] }{qw(rc n)} ], [ 'OK', 0 ], 'a login without deals');

# --- time -----------------------------------------------------------------

for my $min (120, -300, 0) {
    $sim->set_offset($min);
    @r = client($sim, {}, 'time');
    is($r[0]{offset}, $min * 60, "server offset $min min: $r[0]{offset} s");
    ok(abs($r[0]{server_now} - $r[0]{utc_now} - $r[0]{offset}) <= 2,
       'server_now is UTC plus that offset');
}
$sim->set_offset(120);

# --- keep-alive -----------------------------------------------------------

fresh($sim);
@r = client($sim, { ping => 1 }, 'ensure', 'keepalive', 'sleep,1100',
            'keepalive', 'user,70001');
is(scalar(grep { $_->{rc} eq 'OK' } @r), 5, 'keepalive: OK');
$st = $sim->stats;
is(ep_requests($st, '/api/test/access'), 1,
   'one /api/test/access, only once idle for ping_interval');
is($st->{connections_opened}, 1, 'on the one connection');

{
    # the server closes a connection idle for 1 s
    my $i = Mt5Credit::Mt5Sim->new($sb, name => 'mt5simI', idle_timeout => 1);
    @r = client($i, {}, 'ensure', 'sleep,2500',
                'balance,70001,2,1.00,dep:t41-idle');
    is($r[2]{rc}, 'OK',
       'a connection the server closed while idle is replaced before a '
       . 'balance call is sent: OK, not an unknown outcome');
    $st = $i->stats;
    is($st->{connections_opened}, 2, 'on a new connection');
    is(ep_requests($st, '/api/trade/balance'), 1, 'sent once');
    $i->stop;
}

# --- key case: "Total" and "time" -----------------------------------------

{
    my $k = Mt5Credit::Mt5Sim->new($sb, name => 'mt5simK',
                                   config => { total_key => 'Total',
                                               time_key => 'time' });
    @r = client($k, {}, 'balance,70001,2,5.00,dep:t41-k1',
                'balance,70001,2,-1.25,dep:t41-k2', "deals,70001,0,$FAR",
                'time');
    is_deeply([ @{ $r[2] }{qw(rc n)} ], [ 'OK', 2 ],
              '"Total" read as well as "total"');
    is_deeply([ map { $_->{profit} } @{ $r[2]{deals} } ], [ '5.00', '-1.25' ],
              'and the deals exact, negative too');
    is($r[3]{offset}, 7200, '"time" read as well as "Time"');
}

# --- the sources ----------------------------------------------------------

for my $src (qw(batch/lib/mc_money.c batch/mt5/mc_mt5.c batch/mt5/mc_mt5_auth.c)) {
    open my $fh, '<', "$ROOT/$src" or die "$src: $!";
    my $text = do { local $/; <$fh> };
    $text =~ s{/\*.*?\*/}{}gs;
    unlike($text, qr/\b(?:float|double|strtod|strtof|strtold|atof|
                         json_real_value|json_number_value)\b/x,
           "$src: no floating point");
}

my $all = decode('UTF-8', join '', @ALL_OUTPUT);
unlike($all, qr/Password1|Pässwörd|904ba8ec|169ff113/i,
       'no password or password hash in any error text');

done_testing();
