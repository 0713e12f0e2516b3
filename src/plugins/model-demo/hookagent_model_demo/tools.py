"""The demo tools: deterministic, offline, one of them slow on demand (to show interrupts)."""

from __future__ import annotations

import zlib

import anyio

_SKIES = ("sunny", "light rain", "cloudy", "windy", "clear", "fog", "showers", "snow")
MAX_COUNT = 100
MAX_STEP_SECONDS = 5.0


def get_weather(city: str) -> str:
    """Today's weather for a city (made up, but the same city always gets the same answer)."""
    name = " ".join(city.split()).strip()
    if not name:
        raise ValueError("city must not be empty")
    seed = zlib.crc32(name.lower().encode("utf-8"))
    temperature = seed % 31 - 5
    sky = _SKIES[(seed >> 8) % len(_SKIES)]
    return f"{name.title()}: {temperature}°C, {sky} (demo data, not a forecast)"


async def slow_count(n: int, seconds_per_step: float = 0.4) -> str:
    """Count from 1 to n, sleeping between numbers; interrupting it stops the count at once."""
    if not 1 <= n <= MAX_COUNT:
        raise ValueError(f"n must be between 1 and {MAX_COUNT}, got {n}")
    if not 0 <= seconds_per_step <= MAX_STEP_SECONDS:
        raise ValueError(f"seconds_per_step must be between 0 and {MAX_STEP_SECONDS}")
    numbers = []
    for i in range(1, n + 1):
        await anyio.sleep(seconds_per_step)
        numbers.append(str(i))
    return "counted " + ", ".join(numbers)


DEMO_TOOLS = (get_weather, slow_count)
"""Pass these explicitly: ``AgentConfig(model="demo", tools=DEMO_TOOLS)``."""
