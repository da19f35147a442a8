"""What the store needs to know of a kind: where its objects live and how a write is prepared.

The store never names a kind. It depends on these two protocols, which it owns; the registry's
`ResourceType` and `Strategy` satisfy them (kube's split: `genericregistry.Store` calls the
strategy hooks, the kinds supply them). Keeping the protocols here lets storage sit below the
registry without importing it.
"""

from __future__ import annotations

from typing import Protocol

from runtimes.apimachinery.fielderrors import FieldError
from runtimes.apimachinery.meta import Obj


class WriteStrategy(Protocol):
    """The hooks one write calls, in order: normalize, prepare, default, validate, warn,
    derive."""

    @property
    def subresource(self) -> str: ...

    def prepare_for_create(self, obj: Obj) -> None: ...

    def prepare_for_update(self, new: Obj, old: Obj) -> None: ...

    def default(self, obj: Obj) -> None: ...

    def derive(self, obj: Obj) -> None: ...

    def validate(self, obj: Obj, old: Obj | None) -> list[FieldError]: ...

    def warnings(self, obj: Obj, old: Obj | None) -> list[str]: ...

    def unknown_fields(self, obj: Obj) -> list[str]: ...

    def prune_unknown(self, obj: Obj) -> None: ...

    def normalize(self, obj: Obj) -> None: ...


class StoredKind(Protocol):
    """A kind as the store keys, scopes and names it."""

    @property
    def group(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def plural(self) -> str: ...

    @property
    def namespaced(self) -> bool: ...

    @property
    def api_version(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def strategy(self) -> WriteStrategy: ...

    @property
    def status_strategy(self) -> WriteStrategy | None: ...
