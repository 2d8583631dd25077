package Mt5Credit::Totp;

# A person's authenticator app, for the tests (sql/065): the secret read
# from the otpauth:// URI enrolment printed, the codes RFC 6238 makes of
# it (HMAC-SHA1, 30 s steps, 6 digits), computed here, independently of
# the database's totp_code().
#
#   my $app = Mt5Credit::Totp->new(last_step => sub { ... });
#   $app->enrol('ann', $uri);
#   my ($code, $step) = $app->code('ann');   # a step the database will take
#
# A step is taken once per person, and only after the newest one taken:
# code() hands out the earliest step of the three the database accepts
# (the current one and one either side) that is later than the newest
# taken, which last_step->($person) reads (or the last one code() handed
# out, without it), and waits for the next step when none is left.

use strict;
use warnings;

use Carp;
use Digest::SHA qw(hmac_sha1);
use Time::HiRes qw(time sleep);

my $B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

sub new {
    my ($class, %opt) = @_;
    return bless { key => {}, handed => {}, last_step => $opt{last_step} },
                 $class;
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
        my $last = $self->{last_step} ? $self->{last_step}->($person)
                                      : $self->{handed}{$person} // 0;
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

1;
