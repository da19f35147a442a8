"""inspect(): the controller's one question to an image source, and its typed answers."""

from pathlib import Path

import pytest

from runtimes.controller.inspection import Inspection, inspect
from runtimes.controller.oci.builder import build_image
from runtimes.controller.oci.client import RegistryClient, RegistrySettings
from runtimes.controller.oci.errors import (
    ImageNotFound,
    InvalidImageReference,
    SignatureInvalid,
    SignatureMissing,
    Transient,
)
from runtimes.controller.oci.layout import LayoutStore
from runtimes.controller.signing.cosign import KeyPair, generate_key_pair, sign
from tests.support.registry import RunningRegistry

NAME = "registry.nodus.local/trainers/sft"


@pytest.fixture(scope="module")
def trusted() -> KeyPair:
    return generate_key_pair()


@pytest.fixture(scope="module")
def stranger() -> KeyPair:
    return generate_key_pair()


@pytest.fixture
def store(tmp_path: Path) -> LayoutStore:
    return LayoutStore(tmp_path)


def image(store: LayoutStore, user: str | None = "trainer", **kwargs: bool) -> str:
    return f"{NAME}@{build_image(store, f'{NAME}:v1', user=user, **kwargs)}"


def test_it_requires_a_pinned_reference(store: LayoutStore, trusted: KeyPair) -> None:
    image(store)
    with pytest.raises(InvalidImageReference, match="not pinned"):
        inspect(store, f"{NAME}:v1", [trusted.public_pem], require_signature=False)


def test_it_reports_digest_and_user_without_keys(store: LayoutStore) -> None:
    ref = image(store, user=None)
    assert inspect(store, ref, [], require_signature=False) == Inspection(
        digest=ref.split("@")[1], user="root", verified=False, key_fingerprint=None
    )


def test_it_verifies_the_index_digest_of_a_multi_arch_image(
    store: LayoutStore, trusted: KeyPair
) -> None:
    ref = image(store, user="amd64-user", multi_arch=True)
    sign(store, ref, trusted.private_pem)
    inspection = inspect(store, ref, [trusted.public_pem], require_signature=True)
    assert inspection == Inspection(ref.split("@")[1], "amd64-user", True, trusted.fingerprint)


@pytest.mark.parametrize("signer", [None, "stranger"])
def test_it_only_notes_a_failed_optional_signature(
    store: LayoutStore, trusted: KeyPair, stranger: KeyPair, signer: str | None
) -> None:
    ref = image(store)
    if signer:
        sign(store, ref, stranger.private_pem)
    inspection = inspect(store, ref, [trusted.public_pem], require_signature=False)
    assert (inspection.verified, inspection.key_fingerprint, inspection.user) == (
        False,
        None,
        "trainer",
    )


def test_it_notes_a_good_optional_signature(store: LayoutStore, trusted: KeyPair) -> None:
    ref = image(store)
    sign(store, ref, trusted.private_pem)
    inspection = inspect(store, ref, [trusted.public_pem], require_signature=False)
    assert (inspection.verified, inspection.key_fingerprint) == (True, trusted.fingerprint)


def test_it_raises_when_a_required_signature_is_missing_or_untrusted(
    store: LayoutStore, trusted: KeyPair, stranger: KeyPair
) -> None:
    ref = image(store)
    with pytest.raises(SignatureMissing):
        inspect(store, ref, [trusted.public_pem], require_signature=True)
    sign(store, ref, stranger.private_pem)
    with pytest.raises(SignatureInvalid):
        inspect(store, ref, [trusted.public_pem], require_signature=True)
    with pytest.raises(SignatureInvalid, match="no trusted"):
        inspect(store, ref, [], require_signature=True)


def test_it_raises_image_errors_whether_or_not_signatures_are_required(
    store: LayoutStore, trusted: KeyPair
) -> None:
    for required in (True, False):
        with pytest.raises(ImageNotFound):
            inspect(store, f"{NAME}@sha256:{'2' * 64}", [trusted.public_pem], required)


def test_it_lets_transient_failures_through_for_retry(
    stoppable_registry: RunningRegistry,
    trusted: KeyPair,
) -> None:
    settings = RegistrySettings(allowed_registries=frozenset({stoppable_registry.host}))
    with RegistryClient(settings) as client:
        digest = build_image(client, stoppable_registry.ref("team/sft:v1"))
        ref = stoppable_registry.ref(f"team/sft@{digest}")
        sign(client, ref, trusted.private_pem)
        assert inspect(client, ref, [trusted.public_pem], require_signature=True).verified
        stoppable_registry.stop()
        with pytest.raises(Transient):
            inspect(client, ref, [trusted.public_pem], require_signature=False)
