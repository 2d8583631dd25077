#!/usr/bin/perl
#
# The MT5 Web API simulator (t/mt5sim/, build/t/mt5sim) keeps the contract
# of the MT5 Web API reference (docs/mt5-webapi.md).  For a client tested
# against it, this makes these impossible:
#   - authenticating with a wrong hash (UTF-8 instead of UTF-16LE, hex
#     instead of raw bytes), answering late, or on another connection
#   - trusting a server whose cli_rand_answer is wrong
#   - using a second (pooled) socket without its own handshake: 403
#   - a plain-HTTP or unverified-TLS client
#   - relying on a number where MT5 sends a string, on the order of keys,
#     on the spelling of "total"/"Time", or on unknown deal fields absent
#   - a balance operation the real server refuses (type, login, group,
#     permissions, limits, money) going through here
#   - matching a deal by an untruncated comment, or by UTC time
#   - paging past 100, or missing a deal between pages
#   - a trade (a buy or sell planted on the control port) listed without
#     its Action, Volume and VolumeExt, moving the balance, lost across a
#     restart, or planted at all from a bad body
#   - losing a deal across a restart or a crash of the simulator
#   - a fault the tests ask for (latency, drops before and after the
#     deal, hangs, lies about the login, pages, totals, retcodes, 403s,
#     garbage) not happening exactly as asked, or happening twice

use strict;
use warnings;
use utf8;

use Digest::MD5 ();
use Encode ();
use POSIX qw(strftime);
use Test::More;
use Time::HiRes qw(sleep time);

use lib 't/lib';
use Mt5Credit::Sandbox;
use Mt5Credit::Mt5Sim;

binmode Test::More->builder->$_, ':encoding(UTF-8)'
    for qw(output failure_output todo_output);

my $sb = Mt5Credit::Sandbox->new;
my $sim = Mt5Credit::Mt5Sim->new($sb, http => 1);
my $FAR = 4_000_000_000;         # a "to" beyond any deal

sub retcode {
    my ($r) = @_;
    return $r->{json} ? Mt5Credit::Mt5Sim::Client::code($r->{json}{retcode})
                      : undef;
}

sub authed {
    my ($s, %o) = @_;
    my $c = $s->client;
    my $a = $c->auth(%o);
    die "auth failed: $a->{retcode}" if $a->{retcode} != 0;
    return $c;
}

sub balance {
    my ($c, $login, $amount, $comment, @more) = @_;
    return $c->call('/api/trade/balance', login => $login, type => 2,
                    balance => $amount, comment => $comment, @more);
}

sub ticket { $_[0]{json}{answer}{Ticket} }

sub deal_count { scalar @{ $sim->ledger->{deals} } }

sub all_strings { $_[0] !~ /":\s*[-0-9tfn]/ }

# --- the handshake vectors (section 2) ----------------------------------

{
    my $H = Mt5Credit::Mt5Sim::Client::password_hash('Password1');
    is(unpack('H*', $H), '904ba8ecb16273d2f0ae9c3b8a023752',
       'H for Password1, documented');
    is(join(',', unpack('C*', Digest::MD5::md5(
           Encode::encode('UTF-16LE', 'Password1')))),
       '236,46,146,255,112,191,70,145,174,12,104,224,47,220,108,34',
       'MD5(UTF-16LE) bytes, documented');
    is(Mt5Credit::Mt5Sim::Client::rand_answer($H,
           '73007dc7184747ce0f7c98516ef1c851'),
       '77fe51827f7fa69dd80fbec9aa33f1bb', 'srv_rand_answer, documented');
    is(Mt5Credit::Mt5Sim::Client::rand_answer($H,
           '4db98fec17aab4dc5a240bdc659e8395'),
       '1732021b1b332f51660b2b315eed3a35', 'cli_rand_answer, documented');
    my $U = Mt5Credit::Mt5Sim::Client::password_hash('Pässwörd€1');
    is(unpack('H*', $U), '169ff113d5181c77353f0d70c98d0ed6',
       'H for Pässwörd€1');
    is(Mt5Credit::Mt5Sim::Client::rand_answer($U,
           '73007dc7184747ce0f7c98516ef1c851'),
       '8e082ab6177d6369a65e3215c2289891', 'its srv_rand_answer');
}

# the answer a client hashing UTF-8 would send
sub utf8_answer {
    my ($pw, $srv_rand) = @_;
    my $h = Digest::MD5::md5(Digest::MD5::md5(Encode::encode('UTF-8', $pw))
                             . 'WebAPI');
    return Mt5Credit::Mt5Sim::Client::rand_answer($h, $srv_rand);
}
like(utf8_answer('Password1', '73007dc7184747ce0f7c98516ef1c851'),
     qr/^88f76305/, 'the UTF-8 negative control is the documented one');

# --- sessions: per connection, 403 without one ---------------------------

{
    my $c = $sim->client;
    my $r = $c->call('/api/test/access');
    is($r->{status}, 403, 'unauthenticated test/access: HTTP 403');
    is($r->{body}, '403 Forbidden', 'with the non-JSON body "403 Forbidden"');
    ok(!$r->{json}, 'which is not JSON');
    $r = balance($c, 70001, '10.00', 'unauth');
    is($r->{status}, 403, 'an unauthenticated trade/balance: 403');
    is($c->call('/api/ping')->{status}, 403,
       'an unknown /api/ command, unauthenticated: 403');
}
is(deal_count(), 0, 'and nothing was executed');

{
    my $c = $sim->client;
    my $s = $c->call('/api/auth/start', version => 3470, agent => 'test',
                     login => 1000, type => 'manager');
    like($s->{body}, qr/^\{"retcode":"0\ Done","version_access":"\d+",/,
         'auth/start answers flat, retcode first');
    like($s->{json}{srv_rand}, qr/^[0-9a-f]{32}$/,
         'srv_rand: 32 lowercase hex digits');
    ok(!exists $s->{json}{answer}, 'no "answer" wrapper');

    my %bad = (
        'type=user'       => [ version => 3470, agent => 'a', login => 1000,
                               type => 'user' ],
        'version 483'     => [ version => 483, agent => 'a', login => 1000,
                               type => 'manager' ],
        'agent w/ space'  => [ version => 3470, agent => 'my agent',
                               login => 1000, type => 'manager' ],
        'empty agent'     => [ version => 3470, agent => '', login => 1000,
                               type => 'manager' ],
        'no login'        => [ version => 3470, agent => 'a',
                               type => 'manager' ],
    );
    for my $case (sort keys %bad) {
        is(retcode($c->call('/api/auth/start', @{ $bad{$case} })), 3,
           "auth/start with $case: 3");
    }
    is(retcode($c->call('/api/auth/start', version => 3470, agent => 'a',
                        login => 1999, type => 'manager')), 1001,
       'an unknown manager: 1001');
    is(retcode($c->call('/api/auth/start', version => 3470, agent => 'a',
                        login => 70001, type => 'manager')), 1001,
       'a client login, not a manager: 1001');
}

{
    my $c = $sim->client;
    is($c->call('/api/auth/answer', srv_rand_answer => '0' x 32,
                cli_rand => '1' x 32)->{status}, 403,
       'auth/answer without a start on this connection: 403');

    my $a = $c->auth(srv_rand_answer => 'f' x 32);
    is($a->{retcode}, 1001, 'a wrong srv_rand_answer: 1001');
    is($c->call('/api/test/access')->{status}, 403,
       'and the connection stays unauthenticated');

    my $s = $c->call('/api/auth/start', version => 3470, agent => 'a',
                     login => 1000, type => 'manager');
    is(retcode($c->call('/api/auth/answer',
                        srv_rand_answer => utf8_answer('Password1',
                                                       $s->{json}{srv_rand}),
                        cli_rand => '1' x 32)), 1001,
       'a password hashed as UTF-8: 1001');

    $s = $c->call('/api/auth/start', version => 3470, agent => 'a',
                  login => 1000, type => 'manager');
    my $h = Mt5Credit::Mt5Sim::Client::password_hash('Password1');
    my $hex = unpack('H*', Digest::MD5::md5($h . pack('H*',
                                                   $s->{json}{srv_rand})));
    is(retcode($c->call('/api/auth/answer', srv_rand_answer => uc $hex,
                        cli_rand => '1' x 32)), 0,
       'the answer in upper-case hex is accepted');
    my $two = $sim->client;
    is($two->call('/api/test/access')->{status}, 403,
       'a second connection is not authenticated');
    is(retcode($c->call('/api/test/access')), 0,
       'while the first one is');

    my $d = $sim->client;
    my $start = $d->call('/api/auth/start', version => 3470, agent => 'a',
                         login => 1000, type => 'manager');
    my $e = $sim->client;
    is($e->call('/api/auth/answer',
                srv_rand_answer => Mt5Credit::Mt5Sim::Client::rand_answer(
                    $h, $start->{json}{srv_rand}),
                cli_rand => '1' x 32)->{status}, 403,
       'an answer on another connection than its start: 403');
}

{
    my $c = $sim->client;
    my $a = $c->auth;
    is($a->{retcode}, 0, 'the handshake succeeds');
    ok($a->{server_ok}, 'and cli_rand_answer proves the server knows H');
    like($a->{answer}{body}, qr/^\{"retcode":"0\ Done","version_access":"\d+",
                                "version_trade":"\d+","cli_rand_answer":
                                "[0-9a-f]{32}"\}$/x,
         'auth/answer: flat, retcode first');
    my $r = $c->call('/api/test/access');
    is($r->{body}, '{"retcode":"0 Done"}', 'test/access: {"retcode":"0 Done"}');
    $r = $c->request('POST', '/api/test/access', body => '{"x":1}');
    is(retcode($r), 0, 'POST works like GET');
    $r = $c->call('/api/quit');
    is($r->{body}, '{"retcode":"0 Done"}', 'quit answers');
    ok($c->closed_by_server, 'and then the server closes the connection');
}

{
    $sim->add_manager(login => 1001, password => 'Pässwörd€1',
                      accountant => JSON::PP::true, groups => ['real\\*']);
    my $c = $sim->client;
    my $a = $c->auth(login => 1001, password => 'Pässwörd€1');
    ok($a->{retcode} == 0 && $a->{server_ok},
       'a non-ASCII API password, UTF-16LE hashed, authenticates');
    $c = $sim->client;
    is($c->auth(login => 1001, password => 'Passwörd€1')->{retcode}, 1001,
       'a wrong one does not');
    $sim->add_manager(login => 1003, password => 'Password1',
                      enabled => JSON::PP::false);
    is($sim->client->auth(login => 1003)->{retcode}, 1002,
       'a disabled manager: 1002');
}

{
    $sim->reset_stats;
    my $c = authed($sim);
    $c->call('/api/test/access') for 1 .. 5;
    my $st = $sim->stats;
    is($st->{connections_opened}, 1, 'keep-alive: 7 requests, one socket');
    is($st->{endpoints}{'/api/test/access'}{requests}, 5,
       'stats count requests per endpoint');
    is($st->{auth_ok}, 1, 'and handshakes');
}

# --- reads: users, accounts, groups, time --------------------------------

my $c = authed($sim);
{
    my $r = $c->call('/api/user/get', login => 70001);
    like($r->{body}, qr/^\{"retcode":"0 Done","answer":\{"Login":"70001",/,
         'user/get: retcode first, then answer');
    ok(all_strings($r->{body}), 'every scalar a string');
    my $u = $r->{json}{answer};
    is($u->{Group}, 'real\\usd', 'Group with its backslash');
    is_deeply([ @$u{qw(Rights Balance Credit Leverage)} ],
              [ '1', '0.00', '0.00', '100' ], 'Rights, Balance, Credit, '
              . 'Leverage');
    is($c->call('/api/user/get', login => 79999)->{body},
       '{"retcode":"13 Not found"}', 'an unknown login: {"retcode":"13 Not '
       . 'found"}');
    is(retcode($c->call('/api/user/get')), 3, 'no login: 3');

    $sim->add_group(group => 'demo\\usd', currency => 'USD',
                    currency_digits => 2);
    $sim->add_account(login => 80001, group => 'demo\\usd',
                      balance => '500.00');
    is(retcode($c->call('/api/user/get', login => 80001)), 8,
       'a login outside the manager\'s groups: 8');

    $r = $c->call('/api/user/account/get', login => 70001);
    ok(all_strings($r->{body}), 'user/account/get: all strings');
    my $a = $r->{json}{answer};
    is_deeply([ map { defined $a->{$_} ? 1 : 0 } qw(Login CurrencyDigits
              Balance Credit Margin MarginFree MarginLevel Equity Profit) ],
              [ (1) x 9 ], 'with every documented field');
    $sim->add_account(login => 70011, group => 'real\\usd',
                      balance => '5.00', no_trade_state => JSON::PP::true);
    is(retcode($c->call('/api/user/account/get', login => 70011)), 13,
       'an account without trade state: 13');
    is(retcode($c->call('/api/user/get', login => 70011)), 0,
       'while user/get still answers');

    $r = $c->call('/api/group/get', group => 'real\\usd');
    is_deeply([ @{ $r->{json}{answer} }{qw(Group Currency CurrencyDigits)} ],
              [ 'real\\usd', 'USD', '2' ], 'group/get, %5C-encoded');
    $r = $c->request('GET', '/api/group/get?group=real%5C%5Cjpy');
    is_deeply([ @{ $r->{json}{answer} }{qw(Currency CurrencyDigits)} ],
              [ 'JPY', '0' ], 'group/get, \\-escaped: JPY has 0 digits');
    is(retcode($c->call('/api/group/get', group => 'real\\eur')), 13,
       'an unknown group: 13');

    $r = $c->call('/api/user/logins', group => 'real\\*');
    ok(ref $r->{json}{answer} eq 'ARRAY'
       && (grep { $_ eq '70001' } @{ $r->{json}{answer} }),
       'user/logins: an array of login strings');
    ok(!(grep { $_ eq '80001' } @{ $r->{json}{answer} }),
       'without the logins outside the manager\'s groups');

    my $now = time;
    $r = $c->call('/api/time/server');
    my ($unix, $text) = $r->{json}{answer}{Time} =~ /^(\d+) (.+)$/;
    ok(abs($unix - ($now + 7200)) <= 2, 'time/server: server time, UTC+120');
    is($text, strftime('%Y.%m.%d %H:%M:%S', gmtime $unix),
       'with its text YYYY.MM.DD hh:mm:ss');
    is($c->call('/api/time/get')->{json}{answer}{TimeZone}, '120',
       'time/get: TimeZone in minutes');
    is($c->call('/api/ping')->{status}, 404,
       'an unknown command, authenticated: 404');
}

# --- trade/balance -------------------------------------------------------

{
    my @bad_type = (0, 1, 7, 15, -2, 'x', '');
    is_deeply([ map { retcode($c->call('/api/trade/balance', login => 70001,
                                       type => $_, balance => '1.00',
                                       comment => 't')) } @bad_type ],
              [ (3) x @bad_type ], 'type not in 2..6: 3');
    is(retcode($c->call('/api/trade/balance', type => 2, balance => '1.00')),
       3, 'no login: 3');
    is(retcode($c->call('/api/trade/balance', login => 70001, type => 2)), 3,
       'no amount: 3');
    is(retcode(balance($c, 79999, '1.00', 't')), 13, 'an unknown login: 13');
    is(retcode(balance($c, 80001, '1.00', 't')), 8,
       'a login outside the manager\'s groups: 8');

    $sim->add_manager(login => 1002, password => 'Password1',
                      groups => ['*']);
    my $viewer = authed($sim, login => 1002);
    is(retcode(balance($viewer, 70001, '1.00', 't')), 8,
       'a manager without "Accountant": 8');
    is(retcode($viewer->call('/api/user/get', login => 70001)), 0,
       'who may still read');

    my @malformed = ('1e3', 'abc', '1.', '.5', '1,5', '', '--1', '0x10',
                     '100.001', '1 0');
    is_deeply([ map { retcode(balance($c, 70001, $_, 't')) } @malformed ],
              [ (3) x @malformed ], 'malformed or too precise amounts: 3');
    is(retcode(balance($c, 70001, '0.00', 't')), 3, 'a zero amount: 3');
    is(retcode(balance($c, 70001, '1000000000.01', 't')), 4005,
       'more than 1e9: 4005');
    is(retcode(balance($c, 70001, '-1000000000.01', 't')), 4005,
       'less than -1e9: 4005');
    is(retcode(balance($c, 70001, '123456789012345', 't')), 4005,
       'far more: 4005');
    is(retcode(balance($c, 70001, '1.00', 't', check_margin => 2)), 3,
       'check_margin=2: 3');
    is(deal_count(), 0, 'none of these made a deal');

    my $before = time;
    my $r = balance($c, 70001, '100.50', 'dep:0001');
    is($r->{body}, '{"retcode":"0 Done","answer":{"Ticket":"' . ticket($r)
                   . '"}}', 'a deposit: {"retcode":"0 Done","answer":'
                   . '{"Ticket":…}}');
    my $deal = $c->call('/api/deal/get', ticket => ticket($r));
    ok(all_strings($deal->{body}), 'deal/get: all strings');
    my $d = $deal->{json}{answer};
    is_deeply({ map { $_ => $d->{$_} } qw(Deal Login Action Profit Comment
                Dealer Entry Reason Symbol Volume DigitsCurrency) },
              { Deal => ticket($r), Login => '70001', Action => '2',
                Profit => '100.50', Comment => 'dep:0001', Dealer => '1000',
                Entry => '0', Reason => '2', Symbol => '', Volume => '0',
                DigitsCurrency => '2' },
              'the deal: Action, Profit, Comment, Dealer and the defaults');
    ok(exists $d->{Fee} && exists $d->{ModifyFlags}
       && exists $d->{VolumeClosedExt}, 'with fields the docs do not list');
    ok(abs($d->{Time} - ($before + 7200)) <= 2, 'Time in server time');
    is(int($d->{TimeMsc} / 1000), $d->{Time}, 'TimeMsc agrees with Time');
    is($c->call('/api/user/get', login => 70001)->{json}{answer}{Balance},
       '100.50', 'the balance moved');
    is(retcode($c->call('/api/deal/get', ticket => 1)), 13,
       'deal/get of an unknown ticket: 13');

    my $t2 = ticket(balance($c, 70001, '0.1', 'dep:0002'));
    cmp_ok($t2, '>', ticket($r), 'tickets grow');
    is($c->call('/api/deal/get', ticket => $t2)->{json}{answer}{Profit},
       '0.10', 'Profit with the currency\'s 2 digits');

    my $jpy = balance($c, 70003, '1500', 'dep:jpy');
    is($c->call('/api/deal/get', ticket => ticket($jpy))->{json}{answer}
       {Profit}, '1500', 'Profit with JPY\'s 0 digits');
    is($c->call('/api/deal/get', ticket => ticket(balance($c, 70003,
       '20.00', 'dep:jpy2')))->{json}{answer}{Profit}, '20',
       '"20.00" for JPY is 20');
    is(retcode(balance($c, 70003, '20.5', 't')), 3,
       'a fraction of a yen: 3');

    is(retcode(balance($c, 70001, '-100.61', 'wd')), 10019,
       'a withdrawal over the balance: 10019');
    is(retcode(balance($c, 70001, '-100.61', 'wd', check_margin => 0)),
       10019, 'even without the margin check');
    is(retcode(balance($c, 70001, '-0.60', 'wd')), 0, 'within it: done');

    is(retcode($c->call('/api/trade/balance', login => 70001, type => 3,
                        balance => '50.00', comment => 'cr')), 0,
       'a credit');
    my $u = $c->call('/api/user/get', login => 70001)->{json}{answer};
    is_deeply([ $u->{Balance}, $u->{Credit} ], [ '100.00', '50.00' ],
              'type 3 moves Credit, not Balance');
    is(retcode($c->call('/api/trade/balance', login => 70001, type => 3,
                        balance => '-50.01', comment => 'cr')), 10019,
       'a credit withdrawal over the issued credit: 10019');
    is(retcode($c->call('/api/trade/balance', login => 70001, type => 6,
                        balance => '5.00', comment => 'bonus')), 0,
       'a bonus');
    is($c->call('/api/user/get', login => 70001)->{json}{answer}{Credit},
       '55.00', 'type 6 moves Credit too');
    is(retcode($c->call('/api/trade/balance', login => 70001, type => 4,
                        balance => '-1.00', comment => 'fee')), 0,
       'a charge (type 4)');
    is(retcode($c->call('/api/trade/balance', login => 70001, type => 5,
                        balance => '1.00', comment => 'fix')), 0,
       'a correction (type 5)');

    $sim->add_account(login => 70010, group => 'real\\usd',
                      balance => '100.00', margin => '80.00');
    is($c->call('/api/user/account/get', login => 70010)->{json}{answer}
       {MarginFree}, '20.00', 'free margin = balance + credit - margin');
    is(retcode(balance($c, 70010, '-50.00', 'wd')), 10019,
       'a withdrawal over the free margin: 10019');
    is(retcode(balance($c, 70010, '-50.00', 'wd', check_margin => 1)), 10019,
       'check_margin=1 too');
    is(retcode(balance($c, 70010, '-50.00', 'wd', check_margin => 0)), 0,
       'check_margin=0 skips it');

    my $long = balance($c, 70001, '1.00', 'ref:' . ('x' x 40));
    is($c->call('/api/deal/get', ticket => ticket($long))->{json}{answer}
       {Comment}, 'ref:' . ('x' x 27), 'a comment is cut to 31 characters');
    my $emoji = balance($c, 70001, '1.00', "😀" x 20);
    is($c->call('/api/deal/get', ticket => ticket($emoji))->{json}{answer}
       {Comment}, "😀" x 15,
       'counted in UTF-16 units: 15 emoji, no half surrogate pair');
    my $acc = balance($c, 70001, '1.00', 'Grüße' x 8);
    is(length $c->call('/api/deal/get', ticket => ticket($acc))->{json}
       {answer}{Comment}, 31, '31 accented characters');
    my $plus = $c->request('GET', '/api/trade/balance?login=70001&type=2&'
                           . 'balance=1.00&comment=a%2Bb+c');
    is($c->call('/api/deal/get', ticket => ticket($plus))->{json}{answer}
       {Comment}, 'a+b c', '%2B is "+", a bare + a space');
    is(retcode($c->request('GET', '/api/trade/balance?login=70001&type=2&'
                           . 'balance=1.00&comment=%ff')), 3,
       'a comment that is not UTF-8: 3');
}

# --- paging: get_total, get_page, get_batch ------------------------------

{
    $sim->add_account(login => 70020, group => 'real\\usd');
    my @t;
    push @t, ticket(balance($c, 70020, "$_.00", "page:$_")) for 1 .. 150;
    is(scalar(grep { defined } @t), 150, '150 deposits to one login');

    my $r = $c->call('/api/deal/get_total', login => 70020, from => 0,
                     to => $FAR);
    is($r->{body}, '{"retcode":"0 Done","answer":{"total":"150"}}',
       'get_total: {"total":"150"} (key spelling from the config)');
    is(retcode($c->call('/api/deal/get_total', login => 70020,
                        to => $FAR)), 3, 'get_total without from: 3');
    is(retcode($c->call('/api/deal/get_total', login => 70020,
                        from => 0)), 3, 'get_total without to: 3');
    is(retcode($c->call('/api/deal/get_page', login => 70020, from => 0,
                        to => $FAR, offset => 0, total => 101)), 3,
       'get_page with total 101: 3');

    my @seen;
    for my $off (0, 100, 150) {
        $r = $c->call('/api/deal/get_page', login => 70020, from => 0,
                      to => $FAR, offset => $off, total => 100);
        push @seen, @{ $r->{json}{answer} };
        is(scalar @{ $r->{json}{answer} }, $off == 0 ? 100
           : $off == 100 ? 50 : 0, "page at offset $off");
    }
    is_deeply([ map { $_->{Deal} } @seen ], \@t,
              'the pages hold every deal once, in (Time, Deal) order');

    my $first = $seen[0];
    is($c->call('/api/deal/get_total', login => 70020, from => $first->{Time},
                to => $first->{Time})->{json}{answer}{total},
       scalar(grep { $_->{Time} == $first->{Time} } @seen),
       'from and to are inclusive');

    # the clock goes back an hour: a later ticket with an earlier Time
    $sim->add_account(login => 70021, group => 'real\\usd');
    my $a = ticket(balance($c, 70021, '1.00', 'before'));
    $sim->set_offset(60);
    my $b = ticket(balance($c, 70021, '2.00', 'after'));
    $sim->set_offset(120);
    $r = $c->call('/api/deal/get_page', login => 70021, from => 0,
                  to => $FAR, offset => 0, total => 10);
    is_deeply([ map { $_->{Deal} } @{ $r->{json}{answer} } ], [ $b, $a ],
              'ordered by Time, then Deal (not by ticket)');

    $r = $c->call('/api/deal/get_batch', login => '70020,70021', from => 0,
                  to => $FAR);
    is(scalar @{ $r->{json}{answer} }, 152, 'get_batch by logins: all, no '
       . 'paging');
    $r = $c->call('/api/deal/get_batch', ticket => "$t[0],$t[1],$t[0]");
    is_deeply([ map { $_->{Deal} } @{ $r->{json}{answer} } ],
              [ @t[0, 1] ], 'get_batch by tickets');
    $r = $c->call('/api/deal/get_batch', group => 'real\\*,!real\\jpy',
                  from => 0, to => $FAR);
    ok(@{ $r->{json}{answer} } >= 152
       && !(grep { $_->{Login} eq '70003' } @{ $r->{json}{answer} }),
       'get_batch by group mask with an exclusion');
    is(retcode($c->call('/api/deal/get_batch', login => 70020,
                        group => 'real\\*', from => 0, to => $FAR)), 3,
       'get_batch with two selectors: 3');
    is(retcode($c->call('/api/deal/get_batch', from => 0, to => $FAR)), 3,
       'get_batch with none: 3');
    is(retcode($c->call('/api/deal/get_batch', login => 70020)), 3,
       'get_batch by login without from/to: 3');
    is(retcode($c->call('/api/deal/get_batch', login => '', from => 0,
                        to => $FAR)), 3, 'get_batch with an empty login: 3');
    $r = $c->request('POST', "/api/deal/get_batch?from=0&to=$FAR",
                     body => '{"login":[70021]}');
    is(scalar @{ $r->{json}{answer} }, 2, 'get_batch with a JSON body');
    $r = $c->call('/api/deal/get_batch', login => 70020, from => 0,
                  to => $FAR, symbol => 'EURUSD');
    is_deeply($r->{json}{answer}, [], 'a symbol filter: no balance deals');
}

# --- trades: buys and sells with a volume, no money ----------------------

sub trade {
    my (%t) = @_;
    return $sim->control(POST => '/control/trade', \%t, may_fail => 1);
}

{
    $sim->add_account(login => 70040, group => 'real\\usd',
                      balance => '250.00');
    my $buy = trade(login => 70040, action => 0, volume => 15000);
    ok($buy->{ok} && $buy->{ticket}, 'POST /control/trade: ok, a ticket');
    my $sell = trade(login => 70040, action => 1, volume => 1);
    cmp_ok($sell->{ticket}, '>', $buy->{ticket}, 'a sell: the next ticket');
    my $old = trade(login => 70040, action => 0, volume => 200,
                    time => 1700000000);

    my $r = $c->call('/api/deal/get_page', login => 70040, from => 0,
                     to => $FAR, offset => 0, total => 10);
    ok(all_strings($r->{body}), 'trades in get_page: all strings');
    my %page = map { $_->{Deal} => $_ } @{ $r->{json}{answer} };
    is_deeply([ map { [ @{ $page{ $_->{ticket} } }{qw(Login Action Volume
                        VolumeExt Profit)} ] } $buy, $sell ],
              [ [ '70040', '0', '15000', '150000000', '0.00' ],
                [ '70040', '1', '1', '10000', '0.00' ] ],
              'get_page lists them on their login: Action 0 buy, 1 sell, '
              . 'Volume in 1/10000 lot, VolumeExt in 1e-8, Profit 0');
    is($page{ $old->{ticket} }{Time}, '1700000000',
       '"time" back-dates a trade (server seconds)');
    is($c->call('/api/deal/get', ticket => $buy->{ticket})->{json}{answer}
       {Volume}, '15000', 'deal/get: the same Volume');
    is($c->call('/api/user/get', login => 70040)->{json}{answer}
       {Balance}, '250.00', 'trades leave the balance as it was');
    my ($acc) = grep { $_->{login} eq '70040' }
                @{ $sim->ledger->{accounts} };
    is_deeply([ @$acc{qw(balance credit deals)} ], [ '250.00', '0.00', '3' ],
              'and the credit: three deals, no money');

    my $n = deal_count();
    my @bad = (
        [ 'no login'         => { action => 0, volume => 1 } ],
        [ 'no action'        => { login => 70040, volume => 1 } ],
        [ 'no volume'        => { login => 70040, action => 0 } ],
        [ 'login 0'          => { login => 0, action => 0, volume => 1 } ],
        [ 'login as text'    => { login => '70040', action => 0,
                                  volume => 1 } ],
        [ 'action 2'         => { login => 70040, action => 2,
                                  volume => 1 } ],
        [ 'action -1'        => { login => 70040, action => -1,
                                  volume => 1 } ],
        [ 'action as text'   => { login => 70040, action => '0',
                                  volume => 1 } ],
        [ 'volume 0'         => { login => 70040, action => 0,
                                  volume => 0 } ],
        [ 'volume -100'      => { login => 70040, action => 1,
                                  volume => -100 } ],
        [ 'volume 1.5'       => { login => 70040, action => 0,
                                  volume => 1.5 } ],
        [ 'volume as text'   => { login => 70040, action => 0,
                                  volume => '100' } ],
        [ 'volume past VolumeExt' => { login => 70040, action => 0,
                                       volume => 1844674407370956 } ],
        [ 'time -1'          => { login => 70040, action => 0,
                                  volume => 1, time => -1 } ],
    );
    my @status = map { trade(%{ $_->[1] }) } @bad;
    is_deeply([ map { $_->{status} // 200 } @status ], [ (400) x @bad ],
              'bad bodies: 400 (' . join(', ', map { $_->[0] } @bad) . ')');
    ok(!(grep { !$_->{error} } @status), 'each with an error');
    like($status[5]{error}, qr/"action" must be 0 \(buy\) or 1 \(sell\)/,
         'which says what is wrong');
    my $raw = $sb->http(POST => '/control/trade',
                        port => $sim->control_port, body => '[1]');
    is($raw->{status}, 400, 'a body that is not an object: 400');
    my $unknown = trade(login => 79999, action => 0, volume => 1);
    is_deeply([ @$unknown{qw(status retcode)} ], [ 409, 13 ],
              'an unknown login: 409, retcode 13');
    is(deal_count(), $n, 'none of these planted a deal');
}

# --- faults --------------------------------------------------------------

my %base = (login => 70030, group => 'real\\usd', balance => '1000.00');
$sim->add_account(%base);

sub deals_of { @{ $sim->deals_of($_[0]) } }

{
    $sim->fault(kind => 'latency', ms => 400, endpoint => '/api/test/access');
    my $t0 = time;
    is(retcode($c->call('/api/test/access')), 0, 'latency: the answer comes');
    cmp_ok(time - $t0, '>=', 0.39, 'after the delay');
    $t0 = time;
    $c->call('/api/test/access');
    cmp_ok(time - $t0, '<', 0.3, 'once (count 1)');
}

{
    my $n = deal_count();
    my $x = authed($sim);
    $sim->fault(kind => 'drop_before', endpoint => '/api/trade/balance');
    ok(balance($x, 70030, '1.00', 'f:drop-before')->{closed},
       'drop_before: the connection closes without an answer');
    is(deal_count(), $n, 'and nothing executed');

    $x = authed($sim);
    $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
    ok(balance($x, 70030, '2.00', 'f:drop-after')->{closed},
       'drop_after: no answer either');
    my @d = grep { $_->{Comment} eq 'f:drop-after' } deals_of(70030);
    is(scalar @d, 1, 'but the deal exists, once');
    is($d[0]{Profit}, '2.00', 'with its amount');
}

{
    my $x = authed($sim);
    $x->{timeout} = 1;
    $sim->fault(kind => 'hang', endpoint => '/api/trade/balance');
    ok(balance($x, 70030, '3.00', 'f:hang')->{timeout}, 'hang: no answer');
    is($sim->stats->{hanging}, 1, 'the request is held');
    is(scalar(grep { $_->{Comment} eq 'f:hang' } deals_of(70030)), 0,
       'and not executed');
    $sim->clear_faults;
    my $r = $x->response(5);
    is(retcode($r), 0, 'clearing the faults lets it go on');
    is(scalar(grep { $_->{Comment} eq 'f:hang' } deals_of(70030)), 1,
       'and execute once');

    $x = authed($sim);
    $x->{timeout} = 1;
    $sim->fault(kind => 'hang', endpoint => '/api/trade/balance');
    ok(balance($x, 70030, '4.00', 'f:hang-gone')->{timeout},
       'a second hang');
    $x->close;
    my $until = time + 5;
    sleep 0.05 while $sim->stats->{hanging} && time < $until;
    is($sim->stats->{hanging}, 0, 'ends when the client goes away');
    $sim->clear_faults;
    sleep 0.2;
    is(scalar(grep { $_->{Comment} eq 'f:hang-gone' } deals_of(70030)), 0,
       'without executing, even after the faults are cleared');

    $x = authed($sim);
    $x->{timeout} = 1;
    $sim->fault(kind => 'hang_after', endpoint => '/api/trade/balance');
    ok(balance($x, 70030, '5.00', 'f:hang-after')->{timeout},
       'hang_after: no answer');
    is(scalar(grep { $_->{Comment} eq 'f:hang-after' } deals_of(70030)), 1,
       'but the deal is made');
    $x->close;
    sleep 0.05 while $sim->stats->{hanging} && time < $until + 5;
    $sim->clear_faults;
}

{
    $sim->fault(kind => 'wrong_login', login => 70002,
                endpoint => '/api/user/get');
    is($c->call('/api/user/get', login => 70001)->{json}{answer}{Login},
       '70002', 'wrong_login: user/get answers about 70002');
    is($c->call('/api/user/get', login => 70001)->{json}{answer}{Login},
       '70001', 'once');
    $sim->fault(kind => 'wrong_login', endpoint => '/api/user/account/get');
    is($c->call('/api/user/account/get', login => 70001)->{json}{answer}
       {Login}, '70002', 'user/account/get: asked + 1 by default');
    $sim->fault(kind => 'wrong_login', endpoint => '/api/deal/get_page');
    my $r = $c->call('/api/deal/get_page', login => 70020, from => 0,
                     to => $FAR, offset => 0, total => 5);
    is_deeply([ map { $_->{Login} } @{ $r->{json}{answer} } ],
              [ ('70021') x 5 ], 'deal lists: every Login field');

    my $n = deal_count();
    $sim->fault(kind => 'retcode', retcode => '10019 Not enough money',
                endpoint => '/api/trade/balance', count => 2);
    $r = balance($c, 70030, '1.00', 'f:rc');
    is($r->{body}, '{"retcode":"10019 Not enough money"}',
       'retcode: the given retcode, alone');
    is(retcode(balance($c, 70030, '1.00', 'f:rc')), 10019, 'twice');
    is(deal_count(), $n, 'nothing executed');
    is(retcode(balance($c, 70030, '1.00', 'f:rc')), 0, 'then done');

    $sim->fault(kind => 'partial_page');
    $r = $c->call('/api/deal/get_page', login => 70020, from => 0,
                  to => $FAR, offset => 0, total => 100);
    is(scalar @{ $r->{json}{answer} }, 99, 'partial_page: 99 of 100');
    $sim->fault(kind => 'empty_page');
    $r = $c->call('/api/deal/get_page', login => 70020, from => 0,
                  to => $FAR, offset => 0, total => 100);
    is_deeply($r->{json}{answer}, [], 'empty_page: []');
    $sim->fault(kind => 'bad_total');
    is($c->call('/api/deal/get_total', login => 70020, from => 0,
                to => $FAR)->{json}{answer}{total}, '149',
       'bad_total: one less');
    is($c->call('/api/deal/get_total', login => 70020, from => 0,
                to => $FAR)->{json}{answer}{total}, '150', 'once');

    $sim->fault(kind => 'bad_cli_rand');
    my $a = $sim->client->auth;
    ok($a->{retcode} == 0 && !$a->{server_ok},
       'bad_cli_rand: 0 Done with a cli_rand_answer that does not check out');

    my $x = authed($sim);
    $sim->fault(kind => 'http403');
    $r = $x->call('/api/test/access');
    is($r->{status}, 403, 'http403: 403');
    is($x->call('/api/test/access')->{status}, 403,
       'and the session is gone');
    is($x->auth->{retcode}, 0, 'until a new handshake');

    $n = deal_count();
    $sim->fault(kind => 'garbage', endpoint => '/api/trade/balance');
    $r = balance($x, 70030, '1.00', 'f:garbage');
    ok($r->{status} == 200 && !$r->{json}, 'garbage: 200 and not JSON');
    is(deal_count(), $n, 'nothing executed');
    $sim->fault(kind => 'garbage', endpoint => '/api/trade/balance',
                execute => JSON::PP::true);
    balance($x, 70030, '1.00', 'f:garbage-exec');
    is(deal_count(), $n + 1, 'with "execute": the deal, then garbage');

    $sim->fault(kind => 'retcode', retcode => '12 Too frequent requests',
                endpoint => '/api/test/access', count => 0);
    $sim->fault(kind => 'latency', ms => 1, count => 5);
    is_deeply([ map { retcode($x->call('/api/test/access')) } 1 .. 3 ],
              [ 12, 12, 12 ], 'count 0: until cleared');
    my @f = @{ $sim->faults };
    is_deeply([ map { "$_->{kind}:$_->{count}" } @f ],
              [ 'retcode:0', 'latency:2' ],
              'GET /control/faults lists what is armed and left');
    $sim->clear_faults;
    is_deeply($sim->faults, [], 'DELETE clears them');
    is(retcode($x->call('/api/test/access')), 0, 'and calls work again');

    is($sim->control(POST => '/control/fault', { kind => 'nope' },
                     may_fail => 1)->{status}, 400, 'an unknown kind: 400');
    is($sim->control(POST => '/control/fault', { kind => 'bad_total',
                     endpoint => '/api/trade/balance' }, may_fail => 1)
       ->{status}, 400, 'a kind on an endpoint it cannot apply to: 400');
    is($sim->control(POST => '/control/account', { login => 1, group =>
                     'nope' }, may_fail => 1)->{status}, 400,
       'an account in an unknown group: 400');
}

# --- many sessions at once -----------------------------------------------

{
    $sim->reset_stats;
    my @cl = map { authed($sim) } 1 .. 5;
    my @r;
    for my $round (1 .. 3) {
        push @r, retcode(balance($_, 70030, '1.00', 'multi')) for @cl;
    }
    is_deeply(\@r, [ (0) x 15 ], 'five sessions, interleaved, each its own');
    my $st = $sim->stats;
    is($st->{connections_opened}, 5, 'five sockets');
    is($st->{endpoints}{'/api/trade/balance'}{executed}, 15,
       'fifteen operations executed');
    $_->close for @cl;
}

# --- the ledger across restarts and crashes ------------------------------

{
    my $before = $sim->ledger;
    my $tickets = scalar @{ $before->{deals} };
    ok($tickets > 150, "the ledger holds $tickets deals");
    is($sim->stop, 0, 'SIGTERM: exit 0');
    $sim->start;
    is_deeply($sim->ledger, $before,
              'after a restart: the same deals, balances and next ticket');
    my $x = authed($sim);
    is(ticket(balance($x, 70020, '1.00', 'after-restart')),
       $before->{next_ticket}, 'the next ticket continues');
    is(retcode($x->call('/api/user/get', login => 70011)), 0,
       'accounts added over the control port are back');
    my $tr = $x->call('/api/deal/get_page', login => 70040, from => 0,
                      to => $FAR, offset => 0, total => 10);
    is_deeply([ sort map { "$_->{Action}:$_->{Volume}:$_->{VolumeExt}" }
                @{ $tr->{json}{answer} } ],
              [ '0:15000:150000000', '0:200:2000000', '1:1:10000' ],
              'trades are back from the journal, Action and Volume too');
    $x->close;

    my $r = balance(authed($sim), 70020, '7.00', 'before-crash');
    $sim->kill9;
    $sim->start;
    ok((grep { $_->{Comment} eq 'before-crash' } @{ $sim->deals_of(70020) }),
       'a deal answered before a kill -9 survives it');

    my $mid = $sim->ledger;
    $sim->stop;
    my $journal = $sim->state_dir . '/journal.jsonl';
    open my $fh, '>>', $journal or die $!;
    print $fh '{"op":"deal","ticket":';
    close $fh;
    $sim->start;
    is_deeply($sim->ledger, $mid, 'a torn last record is dropped');
    like($sim->log_text, qr/cutting a torn last record/, 'and logged');
    open $fh, '<', $journal or die $!;
    my @lines = <$fh>;
    close $fh;
    like($lines[-1], qr/\}\n\z/, 'the journal ends with a whole record');

    # a deal journaled before trades: no "volume"
    my $next = $sim->ledger->{next_ticket};
    $sim->stop;
    open $fh, '>>', $journal or die $!;
    print $fh '{"op":"deal","ticket":' . $next . ',"login":70020,'
        . '"dealer":1000,"action":2,"digits":2,"amount":100000000,'
        . '"time_msc":1700000000000,"comment":"old-journal"}' . "\n";
    close $fh;
    $sim->start;
    my ($od) = grep { $_->{Comment} eq 'old-journal' }
               @{ $sim->deals_of(70020) };
    is_deeply([ @$od{qw(Deal Profit Volume VolumeExt)} ],
              [ $next, '1.00', '0', '0' ],
              'a journal from before trades replays: its deal has Volume 0');
}

# --- HTTPS ---------------------------------------------------------------

{
    my $tls = Mt5Credit::Mt5Sim->new($sb);
    my $url = $tls->url;
    my $ca = $tls->ca_file;
    my $curl = "curl -sS -m 5 -w ' %{http_code}'";
    my $out = `$curl --cacert $ca $url/api/test/access 2>&1`;
    is($out, '403 Forbidden 403', 'HTTPS: unauthenticated test/access is 403');
    (my $plain = $url) =~ s/^https/http/;
    $out = `curl -sS -m 5 -w ' %{http_code}' $plain/api/test/access 2>&1`;
    isnt($? >> 8, 0, 'plain HTTP on the TLS port fails');
    unlike($out, qr/ (200|403)$/, 'with no HTTP answer at all');
    `curl -sS -m 5 $url/api/test/access 2>&1`;
    is($? >> 8, 60, 'a client that does not trust the CA is refused');

    $tls->reset_stats;
    my $x = Mt5Credit::Mt5Sim::Client->new_tls(port => $tls->port,
                                                ca => $ca);
    my $a = $x->auth;
    ok($a->{retcode} == 0 && $a->{server_ok}, 'the handshake over TLS');
    is(retcode(balance($x, 70001, '12.34', 'tls')), 0,
       'a deposit over TLS');
    is(retcode($x->call('/api/user/get', login => 70001)), 0, 'a read');
    is($tls->stats->{connections_opened}, 1, 'all on one TLS connection');
    my $y = Mt5Credit::Mt5Sim::Client->new_tls(port => $tls->port,
                                                ca => $ca);
    is($y->call('/api/test/access')->{status}, 403,
       'a second TLS connection is not authenticated');
    $x->close;
    $y->close;
    is($tls->stop, 0, 'the TLS simulator stops cleanly');
}

# --- timeouts, the other key spellings -----------------------------------

{
    my $t = Mt5Credit::Mt5Sim->new($sb, http => 1, idle_timeout => 1,
        auth_timeout_ms => 400, config => {
            total_key => 'Total', time_key => 'time',
            answer_without_start => 'retcode', page_over_limit => 'cap',
            deal_fields => { Reason => '17', Order => '9' } });
    my $x = $t->client;
    is($x->auth(delay => 0.8)->{retcode}, 1001,
       'an answer after the auth window (10 s, here 0.4 s): 1001');
    is(retcode($x->call('/api/auth/answer', srv_rand_answer => '0' x 32,
                        cli_rand => '1' x 32)), 3,
       'answer_without_start "retcode": 3 instead of 403');
    $x = $t->client;
    is($x->auth->{retcode}, 0, 'within it: done');
    like($x->call('/api/deal/get_total', login => 70001, from => 0,
                  to => $FAR)->{body}, qr/"answer":\{"Total":"0"\}/,
         'total_key "Total"');
    ok(exists $x->call('/api/time/server')->{json}{answer}{time},
       'time_key "time"');
    my $d = $x->call('/api/deal/get', ticket => ticket(balance($x, 70001,
                     '1.00', 'fields')))->{json}{answer};
    is_deeply([ @$d{qw(Reason Order Entry)} ], [ '17', '9', '0' ],
              'deal_fields override the UNCONFIRMED defaults');
    balance($x, 70002, '1.00', "cap:$_") for 1 .. 101;
    my $r = $x->call('/api/deal/get_page', login => 70002, from => 0,
                     to => $FAR, offset => 0, total => 500);
    is(scalar @{ $r->{json}{answer} || [] }, 100,
       'page_over_limit "cap": total 500 gets 100 of 101');

    my $ok = 1;
    for (1 .. 5) {
        sleep 0.5;
        $ok &&= retcode($x->call('/api/test/access')) == 0;
    }
    ok($ok, 'pings keep a session past the idle timeout');
    sleep 2.5;
    ok($x->closed_by_server(0.5), 'idle for longer: the server closes it');
    is($t->stats->{connections_open}, 0, 'no connection left open');
}

is($sim->stop, 0, 'the simulator stops cleanly');

done_testing();
