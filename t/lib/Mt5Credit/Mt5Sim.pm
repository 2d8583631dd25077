package Mt5Credit::Mt5Sim;

# The MT5 Web API simulator (t/mt5sim/, built to build/t/mt5sim) inside a
# Mt5Credit::Sandbox: its config, state dir and certificates live in the
# sandbox dir, and its pid in $sb->{pids}, so the sandbox stops it on exit,
# on die and on SIGINT/SIGTERM like every other server.
#
#   my $sim = Mt5Credit::Mt5Sim->new($sb);            # HTTPS, default book
#   my $sim = Mt5Credit::Mt5Sim->new($sb, http => 1); # plain HTTP
#   $sim->url, $sim->ca_file                          # for clients
#   $sim->fault(kind => 'drop_after', endpoint => '/api/trade/balance');
#   $sim->ledger->{deals}; $sim->stats; $sim->restart;
#
# Mt5Credit::Mt5Sim::Client (below) is a plain-HTTP keep-alive MT5 client
# for protocol tests against an --http simulator.
#
# MT5SIM_VALGRIND=1 runs the simulator under valgrind (errors exit 99).

use strict;
use warnings;

use Carp qw(croak);
use File::Path qw(make_path);
use JSON::PP;
use POSIX ();
use Time::HiRes qw(sleep time);

use Mt5Credit::Sandbox;

our $BIN = $ENV{MT5SIM_BIN} || "$Mt5Credit::Sandbox::ROOT/build/t/mt5sim";

our $MANAGER = 1000;
our $PASSWORD = 'Password1';

my $JSON = JSON::PP->new->canonical->utf8;
my $PRETTY = JSON::PP->new->canonical->utf8->pretty;
my $instances = 0;

# The book most tests want: one accountant manager over real\*, a USD and a
# JPY group, a few accounts.  new(config => {...}) replaces keys of it.
sub default_config {
    return {
        server_offset_minutes => 120,
        total_key             => 'total',
        managers => [
            { login => $MANAGER, password => $PASSWORD,
              accountant => JSON::PP::true, groups => ['real\\*'] },
        ],
        groups => [
            { group => 'real\\usd', currency => 'USD', currency_digits => 2 },
            { group => 'real\\jpy', currency => 'JPY', currency_digits => 0 },
        ],
        accounts => [
            { login => 70001, group => 'real\\usd', balance => '0.00',
              credit => '0.00', rights => 1, leverage => 100,
              no_trade_state => JSON::PP::false },
            { login => 70002, group => 'real\\usd', balance => '0.00' },
            { login => 70003, group => 'real\\jpy', balance => '0' },
        ],
    };
}

# %opt: name, http (plain HTTP), config (hash merged over the default),
# idle_timeout, auth_timeout_ms, fsync (default 1), start (default 1)
sub new {
    my ($class, $sb, %opt) = @_;
    croak "$BIN is missing: build the simulator first" unless -x $BIN;

    my $name = $opt{name} || 'mt5sim' . ($instances++ ? $instances : '');
    my $self = bless {
        sb           => $sb,
        name         => $name,
        dir          => $sb->dir . "/$name",
        http         => $opt{http} ? 1 : 0,
        idle_timeout => $opt{idle_timeout},
        auth_timeout_ms => $opt{auth_timeout_ms},
        fsync        => $opt{fsync} // 1,
        port         => Mt5Credit::Sandbox::free_port(),
        control_port => Mt5Credit::Sandbox::free_port(),
    }, $class;
    make_path("$self->{dir}/state");

    my $config = default_config();
    $config->{$_} = $opt{config}{$_} for keys %{ $opt{config} || {} };
    $self->{config} = $sb->write_file("$self->{dir}/config.json",
                                      $PRETTY->encode($config));
    $self->make_certs unless $self->{http};
    $self->start unless defined $opt{start} && !$opt{start};
    return $self;
}

# A throwaway CA and a server certificate for 127.0.0.1 and localhost.
sub make_certs {
    my ($self) = @_;
    my $d = "$self->{dir}/tls";
    write_certs($d);
    $self->{ca_file} = "$d/ca.pem";
    $self->{cert} = "$d/server.pem";
    $self->{key} = "$d/server.key";
}

# A test CA and a server certificate it signed for localhost and
# 127.0.0.1, in $d: ca.pem, server.pem, server.key.  A function, not a
# method: t/root/40 makes them for a container, with no sandbox.
sub write_certs {
    my ($d) = @_;
    make_path($d);
    my $ec = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';
    Mt5Credit::Sandbox::run_cmd("openssl req -x509 $ec -keyout $d/ca.key "
        . "-out $d/ca.pem -days 2 -subj '/CN=mt5sim test CA' "
        . "-addext basicConstraints=critical,CA:TRUE "
        . "-addext keyUsage=critical,keyCertSign,cRLSign");
    Mt5Credit::Sandbox::run_cmd("openssl req $ec -keyout $d/server.key "
        . "-out $d/server.csr -subj '/CN=localhost'");
    open my $fh, '>', "$d/ext.cnf" or croak "$d/ext.cnf: $!";
    print $fh "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
        . "basicConstraints=CA:FALSE\n"
        . "keyUsage=critical,digitalSignature,keyEncipherment\n"
        . "extendedKeyUsage=serverAuth\n";
    close $fh or croak "$d/ext.cnf: $!";
    Mt5Credit::Sandbox::run_cmd("openssl x509 -req -in $d/server.csr "
        . "-CA $d/ca.pem -CAkey $d/ca.key -CAcreateserial "
        . "-out $d/server.pem -days 2 -extfile $d/ext.cnf");
}

sub command {
    my ($self) = @_;
    my @cmd = ($BIN, '--config', $self->{config},
               '--state', "$self->{dir}/state",
               '--port', $self->{port},
               '--control-port', $self->{control_port});
    push @cmd, $self->{http} ? ('--http')
             : ('--tls-cert', $self->{cert}, '--tls-key', $self->{key});
    push @cmd, '--idle-timeout', $self->{idle_timeout}
        if defined $self->{idle_timeout};
    push @cmd, '--auth-timeout-ms', $self->{auth_timeout_ms}
        if defined $self->{auth_timeout_ms};
    push @cmd, '--no-fsync' unless $self->{fsync};
    if ($ENV{MT5SIM_VALGRIND}) {
        unshift @cmd, 'valgrind', '--error-exitcode=99', '--leak-check=full',
            '--errors-for-leak-kinds=definite', '--track-fds=no',
            "--log-file=$self->{dir}/valgrind-%p.log";
    }
    return @cmd;
}

sub log_file { "$_[0]{sb}{dir}/$_[0]{name}.out" }

sub log_text {
    my ($self, $from) = @_;
    open my $fh, '<', $self->log_file or return '';
    seek $fh, $from || 0, 0;
    local $/;
    my $text = <$fh>;
    return $text // '';
}

# Starts and waits for the ready line (so the ports are ours, not some
# other process's that happened to listen there).
sub start {
    my ($self) = @_;
    croak "$self->{name} already runs" if $self->{sb}{pids}{$self->{name}};
    my $from = -s $self->log_file || 0;
    my $pid = $self->{sb}->spawn($self->{name}, $self->command);
    my $until = time + ($ENV{MT5SIM_VALGRIND} ? 120 : 30);
    while (time < $until) {
        my $log = $self->log_text($from);
        return $self if $log =~ /^mt5sim: listening on /m;
        if (waitpid($pid, POSIX::WNOHANG()) == $pid) {
            delete $self->{sb}{pids}{$self->{name}};
            croak "$self->{name} exited ($?) at start:\n$log";
        }
        sleep 0.02;
    }
    croak "$self->{name} did not get ready:\n" . $self->log_text($from);
}

# SIGTERM; returns the exit status (0 for a clean stop)
sub stop {
    my ($self) = @_;
    return $self->{sb}->reap($self->{name}, 'TERM', 60);
}

# Same ports, same state dir: the ledger must come back.
sub restart {
    my ($self) = @_;
    my $rc = $self->stop;
    croak "$self->{name} stopped with status $rc" if $rc;
    return $self->start;
}

sub kill9 {
    my ($self) = @_;
    return $self->{sb}->reap($self->{name}, 'KILL', 10);
}

sub pid          { $_[0]{sb}{pids}{$_[0]{name}} }
sub port         { $_[0]{port} }
sub control_port { $_[0]{control_port} }
sub ca_file      { $_[0]{ca_file} }
sub state_dir    { "$_[0]{dir}/state" }
sub manager      { $MANAGER }
sub password     { $PASSWORD }

sub url {
    my ($self) = @_;
    return ($self->{http} ? 'http' : 'https') . "://127.0.0.1:$self->{port}";
}

# ------------------------------------------------------------ control

# One control call; returns the decoded JSON.  Dies on a status other
# than 200 unless {may_fail}, which returns { status, error }.
sub control {
    my ($self, $method, $path, $body, %opt) = @_;
    my $r = $self->{sb}->http($method, $path, port => $self->{control_port},
        defined $body ? (body => $JSON->encode($body)) : (),
        headers => [[ 'Content-Type', 'application/json' ]]);
    my $json = eval { $JSON->decode($r->{body}) };
    if ($r->{status} != 200) {
        return { status => $r->{status}, %{ $json || {} } } if $opt{may_fail};
        croak "control $method $path: $r->{status} $r->{body}";
    }
    croak "control $method $path: not JSON: $r->{body}" unless $json;
    return $json;
}

sub fault        { my ($self, %f) = @_; $self->post('/control/fault', \%f) }
sub clear_faults { $_[0]->control(DELETE => '/control/fault') }
sub faults       { $_[0]->control(GET => '/control/faults')->{faults} }
sub ledger       { $_[0]->control(GET => '/control/ledger') }
sub stats        { $_[0]->control(GET => '/control/stats') }
sub reset_stats  { $_[0]->control(DELETE => '/control/stats') }
sub add_account  { my ($self, %a) = @_; $self->post('/control/account', \%a) }
sub add_group    { my ($self, %g) = @_; $self->post('/control/group', \%g) }
sub add_manager  { my ($self, %m) = @_; $self->post('/control/manager', \%m) }
sub post         { $_[0]->control(POST => $_[1], $_[2]) }

# A dealer's balance operation from the terminal: no API client made it.
# Returns the deal ticket.
sub manual_deal {
    my ($self, %d) = @_;
    my $r = $self->post('/control/deal', { manager => $MANAGER + 0,
                                           type => 2, comment => '', %d });
    croak "manual deal: " . ($r->{error} // 'failed') unless $r->{ticket};
    return $r->{ticket};
}

sub set_offset {
    my ($self, $minutes) = @_;
    return $self->control(POST => '/control/time',
                          { offset_minutes => $minutes });
}

# requests to one endpoint so far ("/api/trade/balance")
sub requests {
    my ($self, $endpoint) = @_;
    return $self->stats->{endpoints}{$endpoint}{requests};
}

# deals of one login, from the ledger
sub deals_of {
    my ($self, $login) = @_;
    return [ grep { $_->{Login} eq $login } @{ $self->ledger->{deals} } ];
}

# A client on the API port (plain HTTP simulators only).
sub client {
    my ($self, %opt) = @_;
    croak "Mt5Sim::Client speaks plain HTTP: start with http => 1"
        unless $self->{http};
    return Mt5Credit::Mt5Sim::Client->new(port => $self->{port}, %opt);
}


package Mt5Credit::Mt5Sim::Client;

# One TCP connection = one MT5 session, requests strictly one at a time,
# Connection: keep-alive.  Every call returns
#   { status, headers, body, json }  or  { closed => 1 } / { timeout => 1 }.

use strict;
use warnings;

use Carp qw(croak);
use Digest::MD5 qw(md5 md5_hex);
use Encode qw(encode);
use IO::Select;
use IO::Socket::INET;
use IPC::Open2 ();
use JSON::PP;
use Time::HiRes qw(sleep);

my $DECODER = JSON::PP->new->utf8;

sub new {
    my ($class, %opt) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                  PeerPort => $opt{port}, Proto => 'tcp')
        or croak "connect 127.0.0.1:$opt{port}: $!";
    $s->autoflush(1);
    return bless { sock => $s, out => $s, port => $opt{port},
                   timeout => $opt{timeout} || 10 }, $class;
}

# The same over TLS, through `openssl s_client` (no Perl TLS module is
# needed): the certificate must verify against $ca for 127.0.0.1.
sub new_tls {
    my ($class, %opt) = @_;
    my ($out, $in);
    croak "bad port or CA path" if "$opt{port}$opt{ca}" =~ /[^\w\/.:-]/;
    my $pid = IPC::Open2::open2($in, $out, 'sh', '-c',
        "exec openssl s_client -quiet -connect 127.0.0.1:$opt{port} "
        . "-CAfile $opt{ca} -verify_return_error -verify_ip 127.0.0.1 "
        . "-no_ign_eof 2>/dev/null");
    $out->autoflush(1);
    return bless { sock => $in, out => $out, pid => $pid,
                   port => $opt{port}, timeout => $opt{timeout} || 10 },
                 $class;
}

sub close {
    my ($self) = @_;
    CORE::close($self->{out})
        if $self->{out} && $self->{out} != ($self->{sock} // 0);
    CORE::close($self->{sock}) if $self->{sock};
    $self->{sock} = $self->{out} = undef;
    if ($self->{pid}) {
        kill 'TERM', $self->{pid};
        waitpid($self->{pid}, 0);
        delete $self->{pid};
    }
}

sub DESTROY { $_[0]->close }

# percent-encodes the UTF-8 bytes of anything outside [A-Za-z0-9._~-]
sub escape {
    my ($v) = @_;
    $v = encode('UTF-8', $v) if utf8::is_utf8($v);
    $v =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    return $v;
}

sub query {
    my (@pairs) = @_;
    my @q;
    while (my ($k, $v) = splice @pairs, 0, 2) {
        push @q, escape($k) . '=' . escape($v);
    }
    return join '&', @q;
}

# $client->call('/api/user/get', login => 70001): GET, parameters in order
sub call {
    my ($self, $path, @params) = @_;
    my $q = query(@params);
    return $self->request('GET', $q eq '' ? $path : "$path?$q");
}

sub request {
    my ($self, $method, $target, %opt) = @_;
    return { closed => 1 } unless $self->{sock};
    my $req = "$method $target HTTP/1.1\r\nHost: 127.0.0.1:$self->{port}\r\n"
            . "Accept: */*\r\nUser-Agent: mt5sim-test\r\n"
            . "Connection: keep-alive\r\n";
    if (defined $opt{body}) {
        $req .= "Content-Type: application/x-www-form-urlencoded\r\n"
              . "Content-Length: " . length($opt{body}) . "\r\n\r\n$opt{body}";
    } else {
        $req .= "\r\n";
    }
    my $ok = eval { local $SIG{PIPE} = 'IGNORE'; print { $self->{out} } $req };
    return { closed => 1 } unless $ok;
    return $self->response($opt{timeout});
}

sub read_more {
    my ($self, $buf, $timeout) = @_;
    my $sel = IO::Select->new($self->{sock});
    return -1 unless $sel->can_read($timeout);
    my $n = sysread($self->{sock}, $$buf, 65536, length $$buf);
    return $n || 0;
}

sub response {
    my ($self, $timeout) = @_;
    $timeout ||= $self->{timeout};
    my $buf = $self->{pending} // '';
    delete $self->{pending};
    while ($buf !~ /\r\n\r\n/) {
        my $n = $self->read_more(\$buf, $timeout);
        return { timeout => 1 } if $n < 0;
        if ($n == 0) { $self->close; return { closed => 1, raw => $buf } }
    }
    my ($head, $rest) = split /\r\n\r\n/, $buf, 2;
    my ($status) = $head =~ m{^HTTP/1\.\d (\d{3})};
    my %h;
    for my $l (split /\r\n/, $head) {
        $h{lc $1} = $2 if $l =~ /^([^:]+):\s*(.*)$/;
    }
    my $len = $h{'content-length'} // 0;
    while (length $rest < $len) {
        my $n = $self->read_more(\$rest, $timeout);
        return { timeout => 1 } if $n < 0;
        if ($n == 0) { $self->close; return { closed => 1, raw => $buf } }
    }
    my $body = substr($rest, 0, $len);
    $self->{pending} = substr($rest, $len) if length $rest > $len;
    $self->close if ($h{connection} // '') =~ /close/i;
    my $json = eval { $DECODER->decode($body) };
    return { status => $status, headers => \%h, body => $body,
             json => $json };
}

# the server closed this connection (EOF within $wait seconds)
sub closed_by_server {
    my ($self, $wait) = @_;
    return 1 unless $self->{sock};
    my $buf = '';
    my $n = $self->read_more(\$buf, $wait // 2);
    return $n == 0 ? 1 : 0;
}

# --- the handshake, reference section 2 -----------------------------------

# H = MD5(MD5(UTF-16LE(password)) . "WebAPI"), raw bytes; $pw is text
sub password_hash {
    my ($pw) = @_;
    return md5(md5(encode('UTF-16LE', $pw)) . 'WebAPI');
}

# hex(MD5(H . bytes(rand_hex)))
sub rand_answer {
    my ($h, $rand_hex) = @_;
    return md5_hex($h . pack('H*', $rand_hex));
}

sub random_hex { join '', map { sprintf '%02x', int rand 256 } 1 .. 16 }

# the leading integer of a retcode ("10019 Not enough money" -> 10019)
sub code {
    my ($retcode) = @_;
    return defined $retcode && $retcode =~ /^\s*(-?\d+)/ ? $1 + 0 : -1;
}

# Full handshake.  Returns { start, answer, retcode, server_ok }: the
# responses, the answer's retcode, and whether cli_rand_answer checked out.
sub auth {
    my ($self, %o) = @_;
    my $login = $o{login} // $Mt5Credit::Mt5Sim::MANAGER;
    my $pw = $o{password} // $Mt5Credit::Mt5Sim::PASSWORD;
    my $start = $self->call('/api/auth/start', version => 3470,
                            agent => 'mt5sim-test', login => $login,
                            type => 'manager');
    my %r = (start => $start);
    return { %r, retcode => -1 } unless $start->{json};
    my $rc = code($start->{json}{retcode});
    return { %r, retcode => $rc } if $rc;
    sleep $o{delay} if $o{delay};
    my $h = password_hash($pw);
    my $cli = random_hex();
    my $answer = $o{srv_rand_answer}
        // rand_answer($h, $start->{json}{srv_rand});
    my $ans = $self->call('/api/auth/answer', srv_rand_answer => $answer,
                          cli_rand => $cli);
    $r{answer} = $ans;
    return { %r, retcode => -1 } unless $ans->{json};
    $r{retcode} = code($ans->{json}{retcode});
    $r{server_ok} = $r{retcode} == 0
        && lc($ans->{json}{cli_rand_answer} // '') eq rand_answer($h, $cli);
    return \%r;
}

1;
