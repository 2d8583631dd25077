package Mt5Credit::Stack;

# The whole system in one sandbox, for end-to-end tests, the demo and the
# benchmark: PostgreSQL, Redis, nginx with the module, the MT5 Web API
# simulator, and worker processes.  A client "alice" owns MT5 logins on
# server "live1"; deposits are made the way the portal makes them and
# paid with signed Stripe webhooks through nginx.

use strict;
use warnings;

use Carp qw(croak);
use Time::HiRes qw(sleep time);

use Mt5Credit::Sandbox;
use Mt5Credit::Mt5Sim;
use Mt5Credit::Provider qw(stripe_event stripe_headers);
use Mt5Credit::Worker;

our $SECRET = 'whsec_stack_secret';

#   sim => { http => 1, config => {...}, fsync => 0 }  simulator options
#   redis => 0                                         no Redis at all
#   nginx_http => '...'                                extra http{} lines
#   locations => '...'                                 extra server{} lines
#   nginx_single => 1                                  nginx in one process
#   postgres => 'conninfo'                             the edge's conninfo
#                                   (default: the sandbox's primary, as edge)
sub new {
    my ($class, %opt) = @_;
    my $sb = Mt5Credit::Sandbox->new(%{ $opt{sandbox} || {} });
    $sb->start_postgres;
    $sb->start_redis unless defined $opt{redis} && !$opt{redis};

    my $sim = Mt5Credit::Mt5Sim->new($sb, %{ $opt{sim} || {} });
    my $secrets = $sb->write_file('stripe.secret', "$SECRET\n");
    my $extra = $opt{nginx_http} || '';
    my $locations = $opt{locations} || '';
    my $redis = $sb->redis_port ? 'mt5_credit_redis %%REDIS%%;' : '';
    my $pg = $opt{postgres} // '%%PG%%';

    # nginx_single: one process, as valgrind runs it
    my %how = (workers => $opt{nginx_workers} || 1,
               single => $opt{nginx_single});
    $sb->start_nginx(<<"HTTP", %how);
    mt5_credit_postgres "$pg";
    $redis
    $extra
    server {
        listen 127.0.0.1:%%PORT%%;
        location = /webhooks/stripe {
            mt5_credit_webhook stripe;
            mt5_credit_signature stripe;
            mt5_credit_secret_file $secrets;
        }
        location = /status { mt5_credit_status; }
        $locations
    }
HTTP

    my $self = bless { sb => $sb, sim => $sim, seq => 0, workers => {} },
                     $class;
    return $self;
}

sub sb  { $_[0]{sb} }
sub sim { $_[0]{sim} }

# An MT5 account in the simulator and its owner in our records.
sub account {
    my ($self, %a) = @_;
    my $login = $a{login} or croak 'login';
    my $group = $a{group} || 'real\\usd';
    my $ours = $a{our_currency} || ($group =~ /jpy/ ? 'JPY' : 'USD');
    $self->{sim}->add_account(login => $login, group => $group,
                              balance => $a{balance} // '0.00',
                              credit => '0.00', rights => $a{rights} // 1,
                              ($a{no_trade_state}
                               ? (no_trade_state => JSON::PP::true) : ()));
    $self->{sb}->register_account($a{client} || 'alice', $login, $ours);
    return $login;
}

# A deposit paid through nginx; returns the credit id (undef if none).
# %p: client, login, amount, currency, pi; for the event, type and what
# it signs of the payer (payer, card, risk_level: Provider.pm).
sub pay {
    my ($self, %p) = @_;
    my $amount = $p{amount} // 50000;
    my $dep = $self->{sb}->create_deposit(client => $p{client} || 'alice',
                                          login => $p{login},
                                          amount => $amount,
                                          currency => $p{currency} || 'USD');
    my $pi = $p{pi} || 'pi_stack_' . $$ . '_' . ++$self->{seq};
    my $res = $self->webhook(stripe_event(deposit => $dep, amount => $amount,
                                          currency => $p{currency} || 'USD',
                                          pi => $pi,
                                          map { defined $p{$_}
                                                ? ($_ => $p{$_}) : () }
                                          qw(type payer card risk_level)));
    croak "webhook: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{body} =~ /"credit":(\d+)/ ? $1 : undef;
}

sub webhook {
    my ($self, $body) = @_;
    return $self->{sb}->http('POST', '/webhooks/stripe', body => $body,
                             headers => stripe_headers($SECRET, $body));
}

# The payment key of a credit (to refund it).
sub payment_of {
    my ($self, $credit) = @_;
    return $self->{sb}->sql1("SELECT provider_payment_id FROM "
                             . "mt5credit.mt5_credit WHERE id = $credit");
}

sub refund {
    my ($self, %r) = @_;
    my $res = $self->webhook(stripe_event(type => 'charge.refunded',
                                          pi => $self->payment_of($r{of}),
                                          amount => $r{amount},
                                          charge => $r{charge}));
    croak "webhook: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{body} =~ /"credit":(\d+)/ ? $1 : undef;
}

sub credit {
    my ($self, $id) = @_;
    my $r = $self->{sb}->psql("SELECT status, attempts, "
                              . "coalesce(mt5_deal_ticket::text, ''), reference "
                              . "FROM mt5credit.mt5_credit WHERE id = $id");
    return { status => $r->[0][0], attempts => $r->[0][1],
             ticket => $r->[0][2], reference => $r->[0][3] };
}

sub status_of { $_[0]->credit($_[1])->{status} }

sub wait_status {
    my ($self, $id, $want, $timeout) = @_;
    return Mt5Credit::Worker::wait_for(
        sub { $self->status_of($id) eq $want }, $timeout || 30);
}

# Deals in the simulator carrying a comment.
sub deals_with {
    my ($self, $comment) = @_;
    return [ grep { ($_->{Comment} // '') eq $comment }
             @{ $self->{sim}->ledger->{deals} } ];
}

# A credit's reference (its MT5 comment, untagged) and the deals under it.
sub ref_of {
    my ($self, $id) = @_;
    return $self->{sb}->sql1("SELECT reference FROM mt5credit.mt5_credit "
                             . "WHERE id = $id");
}

sub deals_of { $_[0]->deals_with($_[0]->ref_of($_[1])) }

sub cases_of {
    my ($self, $credit) = @_;
    return [ map { $_->[0] } @{ $self->{sb}->psql(
        "SELECT kind FROM mt5credit.case WHERE credit_id = $credit "
        . "ORDER BY id") } ];
}

sub history_of {
    my ($self, $credit) = @_;
    return [ map { "$_->[0]>$_->[1]" } @{ $self->{sb}->psql(
        "SELECT coalesce(from_status, '-'), to_status FROM "
        . "mt5credit.credit_history WHERE credit_id = $credit ORDER BY id") } ];
}

# A credit the worker failed, with its case, as the worker leaves them (a
# fixture for the desk's tests); returns the case's id.  $details: a
# jsonb SQL expression.
sub failed_with_case {
    my ($self, $credit, $key, $details) = @_;
    $details //= q('{"retcode": 10019}');
    $self->{sb}->psql(<<"SQL");
BEGIN;
UPDATE mt5credit.mt5_credit SET status = 'claimed', attempts = 1,
    claimed_at = now(), claimed_by = 'fixture',
    lease_expires_at = now() + interval '1 minute' WHERE id = $credit;
UPDATE mt5credit.mt5_credit SET status = 'failed' WHERE id = $credit;
SELECT mt5credit.open_case('mt5_rejected', 'high', '$key', $details, $credit);
COMMIT;
SQL
    return $self->{sb}->sql1("SELECT id FROM mt5credit.case "
                             . "WHERE dedupe_key = '$key'");
}

sub worker_config {
    my ($self, $name, %opt) = @_;
    return Mt5Credit::Worker::config($self->{sb}, $name,
                                     servers => [ [ 'live1', $self->{sim} ] ],
                                     %opt);
}

sub start_worker {
    my ($self, $name, %opt) = @_;
    my $conf = $self->worker_config($name, %opt);
    Mt5Credit::Worker::start($self->{sb}, $name, $conf);
    $self->{workers}{$name} = 1;
    return $conf;
}

sub stop_worker { Mt5Credit::Worker::stop($_[0]{sb}, $_[1]) }
sub kill_worker { Mt5Credit::Worker::kill9($_[0]{sb}, $_[1]) }
sub worker_log  { Mt5Credit::Worker::log_of($_[0]{sb}, $_[1]) }

1;
