"""The prices page /manage/prices/: prices and class multipliers in force, scheduled and past
with their authors; platform admins add rows (past dates after a confirmation), finance reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounting.models import ClassMultiplier, FlavorPrice
from audit.models import AuditEntry
from queues.models import Flavor, ServiceClass

PAGE = "/manage/prices/"
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S}"


@pytest.fixture
def mig_1g(db: None) -> Flavor:
    return Flavor.objects.create(
        name="h100-1g",
        resource="nvidia.com/mig-1g.10gb",
        gpu_model="NVIDIA-H100-80GB-HBM3",
        mig_profile="1g.10gb",
        gpu_equivalent=1 / 7,
    )


@pytest.fixture
def h100_price(flavor_h100: Flavor) -> FlavorPrice:
    return FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("2.10"), effective_from=LONG_AGO
    )


def add(client: Client, kind: str, **fields: Any) -> Any:
    data = {"kind": kind, **{f"{kind}-{name}": value for name, value in fields.items()}}
    return client.post(PAGE, data)


def price_fields(chosen: Flavor, **overrides: Any) -> dict[str, Any]:
    future = timezone.now() + timedelta(days=10)
    return {
        "flavor": chosen.pk,
        "price_per_unit_hour": "2.50",
        "currency": "USD",
        "effective_from": stamp(future),
        "shown_at": stamp(timezone.now()),
    } | overrides


@pytest.fixture
def admin_client(client: Client, platform_admin: Any) -> Client:
    client.force_login(platform_admin)
    return client


def test_page_shows_price_in_force_next_price_and_mig_derivation(
    admin_client, flavor_h100, mig_1g, h100_price
):
    next_month = (timezone.now() + timedelta(days=30)).replace(microsecond=0)
    FlavorPrice.objects.create(
        flavor=flavor_h100, price_per_unit_hour=Decimal("2.80"), effective_from=next_month
    )

    html = admin_client.get(PAGE).content.decode()

    assert "2.100000 USD" in html  # in force now
    assert f"2.800000 USD from {next_month:%Y-%m-%d %H:%M} UTC" in html
    assert "0.142857 x h100 price 2.100000 = 0.300000 USD" in html  # 1/7 x 2.10
    assert "scheduled" in html and "in force" in html
    assert 'name="price-currency" value="USD"' in html  # default from ACCOUNTING_CURRENCY


def test_class_without_rows_shows_its_default_multiplier_then_its_rows(
    admin_client, service_class_std
):
    ServiceClass.objects.filter(pk=service_class_std.pk).update(price_multiplier=Decimal("0.5"))

    html = admin_client.get(PAGE).content.decode()
    assert "x 0.500 (the class&#x27;s default multiplier)" in html

    ClassMultiplier.objects.create(
        service_class=service_class_std, multiplier=Decimal("1.25"), effective_from=LONG_AGO
    )
    html = admin_client.get(PAGE).content.decode()
    assert "x 1.250" in html and "default multiplier" not in html


def test_manage_index_links_to_prices(admin_client):
    html = admin_client.get("/manage/").content.decode()

    assert f'<a href="{PAGE}">Prices</a>' in html


def _count_queries(client: Client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(PAGE).status_code == 200
    return len(queries)


def test_page_reads_the_same_number_of_queries_with_one_or_many_flavors(
    admin_client, flavor_h100, h100_price, service_class_std
):
    ClassMultiplier.objects.create(
        service_class=service_class_std, multiplier=Decimal("1"), effective_from=LONG_AGO
    )
    one = _count_queries(admin_client)

    for n in range(12):
        flavor = Flavor.objects.create(
            name=f"gpu-{n}", resource="nvidia.com/gpu", gpu_model=f"model-{n}"
        )
        FlavorPrice.objects.create(flavor=flavor, price_per_unit_hour=1, effective_from=LONG_AGO)
        Flavor.objects.create(
            name=f"gpu-{n}-mig",
            resource="nvidia.com/mig-1g.10gb",
            gpu_model=f"model-{n}",
            gpu_equivalent=1 / 7,
        )
        service_class = ServiceClass.objects.create(name=f"class-{n}", priority=n)
        ClassMultiplier.objects.create(
            service_class=service_class, multiplier=Decimal("2"), effective_from=LONG_AGO
        )
    assert "gpu-11-mig" in admin_client.get(PAGE).content.decode()

    assert _count_queries(admin_client) == one


def test_finance_reads_the_page_without_forms_and_cannot_post(
    client, finance_user, flavor_h100, h100_price
):
    client.force_login(finance_user)

    html = client.get(PAGE).content.decode()
    assert "2.100000 USD" in html
    assert 'id="add-price"' not in html and 'id="add-multiplier"' not in html
    assert "only platform admins add prices" in html

    response = add(client, "price", **price_fields(flavor_h100))
    assert response.status_code == 403
    assert FlavorPrice.objects.count() == 1


@pytest.mark.parametrize("persona", ["researcher_a", "team_admin_a", "outsider"])
def test_other_roles_get_403(client, persona, request):
    client.force_login(request.getfixturevalue(persona))

    assert client.get(PAGE).status_code == 403


def test_anonymous_visitor_is_sent_to_login(client, db):
    response = client.get(PAGE)

    assert response.status_code == 302 and "/login/" in response["Location"]


def test_admin_adds_a_future_price_and_sees_it_in_the_history_with_author(
    admin_client, flavor_h100, h100_price
):
    fields = price_fields(flavor_h100, price_per_unit_hour="3.25")

    response = add(admin_client, "price", **fields)

    assert response.status_code == 302
    row = FlavorPrice.objects.get(price_per_unit_hour=Decimal("3.25"))
    assert row.currency == "USD" and row.effective_from.tzinfo is not None
    assert stamp(row.effective_from) == fields["effective_from"]
    html = admin_client.get(PAGE).content.decode()
    assert "Added: Price of h100 from" in html
    history_row = html.split(f"{fields['effective_from']}</time>", 1)[1].split("</tr>", 1)[0]
    assert "3.250000 USD" in history_row and "pat-admin" in history_row
    assert "scheduled" in history_row


def test_adding_a_price_records_an_audit_entry(admin_client, flavor_h100, h100_price):
    add(admin_client, "price", **price_fields(flavor_h100, price_per_unit_hour="3.25"))

    row = FlavorPrice.objects.get(price_per_unit_hour=Decimal("3.25"))
    entries = AuditEntry.objects.filter(object_type="accounting.flavorprice", object_id=str(row.pk))
    values = {entry.field: entry.new for entry in entries}
    assert values["price_per_unit_hour"] == "3.250000"
    assert values["flavor"] == "h100" and values["currency"] == "USD"
    assert {entry.actor_name for entry in entries} == {"pat-admin"}
    assert entries[0].object_label.startswith("Price of h100 from")


def test_admin_adds_a_class_multiplier(admin_client, service_class_std):
    future = timezone.now() + timedelta(days=3)

    response = add(
        admin_client,
        "multiplier",
        service_class=service_class_std.pk,
        multiplier="0.75",
        effective_from=stamp(future),
    )

    assert response.status_code == 302
    row = ClassMultiplier.objects.get()
    assert row.multiplier == Decimal("0.75")
    assert AuditEntry.objects.filter(
        object_type="accounting.classmultiplier", object_id=str(row.pk), actor_name="pat-admin"
    ).exists()
    assert "x 0.750 from" in admin_client.get(PAGE).content.decode()


def field_errors(response: Any, prefix: str) -> dict[str, list[str]]:
    form = response.context[f"{prefix}_form"]
    return {name: [str(e) for e in errors] for name, errors in form.errors.items()}


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"price_per_unit_hour": "0"}, "price_per_unit_hour", "more than 0"),
        ({"price_per_unit_hour": "-1"}, "price_per_unit_hour", "more than 0"),
        ({"price_per_unit_hour": "1.1234567"}, "price_per_unit_hour", "6 decimal places"),
        ({"price_per_unit_hour": "cheap"}, "price_per_unit_hour", "number"),
        ({"effective_from": "next tuesday"}, "effective_from", "valid date/time"),
        ({"effective_from": ""}, "effective_from", "required"),
        ({"flavor": "999999"}, "flavor", "valid choice"),
        ({"currency": "EUR"}, "currency", "mix currencies"),
    ],
)
def test_bad_input_gives_an_error_beside_the_field(
    admin_client, flavor_h100, h100_price, overrides, field, message
):
    response = add(admin_client, "price", **price_fields(flavor_h100, **overrides))

    assert response.status_code == 200
    errors = field_errors(response, "price")
    assert list(errors) == [field]
    assert message in errors[field][0]
    assert f'id="id_price-{field}_errors"' in response.content.decode()
    assert FlavorPrice.objects.count() == 1


def test_currency_other_than_the_setting_is_refused_when_no_price_exists(admin_client, flavor_h100):
    response = add(admin_client, "price", **price_fields(flavor_h100, currency="EUR"))

    assert "Prices are kept in USD" in field_errors(response, "price")["currency"][0]
    assert not FlavorPrice.objects.exists()


def test_negative_multiplier_is_refused_beside_the_field(admin_client, service_class_std):
    response = add(
        admin_client,
        "multiplier",
        service_class=service_class_std.pk,
        multiplier="-0.5",
        effective_from=stamp(timezone.now() + timedelta(days=1)),
    )

    assert field_errors(response, "multiplier") == {
        "multiplier": ["A multiplier cannot be negative."]
    }


def test_a_second_price_from_the_same_moment_is_refused(admin_client, flavor_h100, h100_price):
    response = add(
        admin_client, "price", **price_fields(flavor_h100, effective_from=stamp(LONG_AGO))
    )
    confirmed = admin_client.post(
        PAGE,
        {
            "kind": "price",
            "confirm": "yes",
            **{f"price-{k}": v for k, v in price_fields(flavor_h100).items()},
            "price-effective_from": stamp(LONG_AGO),
        },
    )

    for answer in (response, confirmed):
        errors = field_errors(answer, "price")
        assert list(errors) == ["effective_from"]
        assert (
            "already has a row effective from 2020-01-01 00:00:00 UTC"
            in errors["effective_from"][0]
        )
    assert FlavorPrice.objects.count() == 1


def test_a_price_in_the_past_asks_for_confirmation_before_saving(
    admin_client, flavor_h100, h100_price
):
    last_week = stamp(timezone.now() - timedelta(days=7))
    fields = price_fields(flavor_h100, effective_from=last_week)

    first = add(admin_client, "price", **fields)

    assert first.status_code == 200
    html = first.content.decode()
    assert 'id="past-date-warning"' in html
    assert "closed in the ledger keeps the price" in html and "Save anyway" in html
    assert FlavorPrice.objects.count() == 1

    button = admin_client.post(
        PAGE,
        {"kind": "price", "confirm": "yes", **{f"price-{k}": v for k, v in fields.items()}},
    )
    assert button.status_code == 302
    assert stamp(FlavorPrice.objects.latest("effective_from").effective_from) == last_week


def test_the_default_effective_date_now_saves_without_confirmation(
    admin_client, flavor_h100, h100_price
):
    form = admin_client.get(PAGE).context["price_form"]
    now = form["effective_from"].value()
    fields = price_fields(flavor_h100, effective_from=stamp(now), shown_at=stamp(now))

    assert add(admin_client, "price", **fields).status_code == 302


def test_effective_date_with_an_offset_is_stored_in_utc(admin_client, flavor_h100, h100_price):
    response = add(
        admin_client,
        "price",
        **price_fields(flavor_h100, effective_from="2031-05-01T02:00:00+02:00"),
    )

    assert response.status_code == 302
    row = FlavorPrice.objects.latest("effective_from")
    assert row.effective_from == datetime(2031, 5, 1, 0, 0, tzinfo=UTC)


def test_a_class_multiplier_in_the_past_also_asks_for_confirmation(admin_client, service_class_std):
    fields = {
        "kind": "multiplier",
        "multiplier-service_class": service_class_std.pk,
        "multiplier-multiplier": "2",
        "multiplier-effective_from": stamp(timezone.now() - timedelta(days=2)),
        "multiplier-shown_at": stamp(timezone.now()),
    }

    first = admin_client.post(PAGE, fields)
    assert 'id="past-date-warning"' in first.content.decode()
    assert not ClassMultiplier.objects.exists()

    assert admin_client.post(PAGE, fields | {"confirm": "yes"}).status_code == 302
    assert ClassMultiplier.objects.get().multiplier == Decimal("2")


def test_a_post_without_a_known_kind_is_a_bad_request(admin_client):
    response = admin_client.post(PAGE, {"kind": "discount"})

    assert response.status_code == 400
    assert b"kind" in response.content
