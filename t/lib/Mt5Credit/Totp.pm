package Mt5Credit::Totp;

# A person's authenticator app, for the tests (sql/065): the secret read
# from the otpauth:// URI enrolment printed, the codes RFC 6238 makes of
# it (HMAC-SHA1, 30 s steps, 6 digits), computed here, independently of
# the database's totp_code().
#
#   my $app = Mt5Credit::Totp->new(sb => $sb);
#   $app->enrol('ann', $uri);
#   my ($code, $step) = $app->code('ann');   # a step the database will take
#   $action = $app->with_code($sb, 'ann@example.com', $action);
#
# A step is taken once per person, and only after the newest one taken:
# code() hands out the earliest step of the three the database accepts
# (the current one and one either side) that is later than the newest
# taken, which it reads from the sandbox's database (or the last one it
# handed out, without one), and waits for the next step when none is
# left.

use strict;
use warnings;

use Carp;
use Digest::SHA qw(hmac_sha1);
use Time::HiRes qw(time sleep);

my $B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

# the console's actions that move money: each carries its person's code
our $MONEY = qr/^(?:propose|propose_settle_done|approve|withdrawal_prepare
                   |withdrawal_approve)$/x;

sub new {
    my ($class, %opt) = @_;
    return bless { key => {}, handed => {}, sb => $opt{sb} }, $class;
}

sub last_step {
    my ($self, $person) = @_;
    return $self->{handed}{$person} // 0 unless $self->{sb};
    (my $q = $person) =~ s/'/''/g;
    return $self->{sb}->sql1("SELECT coalesce(max(t.last_step), 0) FROM "
        . "mt5credit.person_totp t JOIN pg_roles r ON r.oid = t.person "
        . "WHERE r.rolname = '$q'");
}

# the secret of an otpauth://totp/ URI, as bytes
sub secret_of {
    my ($uri) = @_;
    my ($b32) = $uri =~ m{^otpauth://totp/[^?]+\?(?:.*&)?secret=([A-Z2-7]+)}
        or croak "not an otpauth://totp URI with a secret: $uri";
    my $bits = join '', map { sprintf '%05b', index($B32, $_) }
                        split //, $b32;
    return pack 'B*', substr($bits, 0, length($bits) - length($bits) % 8);
}

# RFC 6238: the code of one step
sub code_at {
    my ($key, $step) = @_;
    my $h = hmac_sha1(pack('NN', int($step / 2**32), $step % 2**32), $key);
    my $o = ord(substr($h, -1)) & 15;
    return sprintf '%06d', (unpack('N', substr($h, $o, 4)) & 0x7fffffff)
                           % 1_000_000;
}

sub step_now { int(time / 30) }

sub enrol {
    my ($self, $person, $uri) = @_;
    $self->{key}{$person} = secret_of($uri);
    delete $self->{handed}{$person};
    return $self->{key}{$person};
}

sub enrolled { exists $_[0]{key}{$_[1]} }

# the code of a given step (a wrong one: another step's, or none taken)
sub code_of_step {
    my ($self, $person, $step) = @_;
    my $key = $self->{key}{$person} or croak "$person is not enrolled";
    return code_at($key, $step);
}

sub code {
    my ($self, $person) = @_;
    my $key = $self->{key}{$person} or croak "$person is not enrolled";
    for (;;) {
        my $last = $self->last_step($person);
        my $now = step_now();
        # the step before is taken only while 3 s of it remain
        for my $s ($now - 1, $now, $now + 1) {
            next if $s <= $last;
            next if $s == $now - 1 && ($now + 1) * 30 - time < 3;
            $self->{handed}{$person} = $s;
            return wantarray ? (code_at($key, $s), $s) : code_at($key, $s);
        }
        sleep(($now + 1) * 30 - time + 0.2);
    }
}

# A console action as a person's page sends it: a money action with the
# code of the person the console's name maps to (sql/063), whose app is
# enrolled at first use, by the sandbox's superuser as a person admin
# would.  Any other action, a name that maps to nobody or to a person
# who may not act (a reader: nothing to enrol), or an action that names
# its code already, unchanged.
sub with_code {
    my ($self, $sb, $name, $action) = @_;
    return $action unless ref $action eq 'HASH' && !exists $action->{code}
                          && ($action->{action} // '') =~ $MONEY;
    (my $q = $name) =~ s/'/''/g;
    my $person = $sb->psql("SELECT p FROM (SELECT mt5credit."
        . "console_person_of('$q') AS p) x WHERE pg_has_role(p, "
        . "'mt5credit_operator', 'USAGE')", may_fail => 1, raw => 1);
    chomp $person;
    return $action if $person !~ /^[a-z_][a-z0-9_]*$/;
    unless ($self->enrolled($person)) {
        my $uri = $sb->psql("SELECT mt5credit.person_totp_enrol('$person')",
                            may_fail => 1, raw => 1);
        return $action unless $uri =~ /^otpauth:/;
        $self->enrol($person, $uri);
    }
    return { %$action, code => scalar $self->code($person) };
}

1;
