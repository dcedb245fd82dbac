"""Build the embedded HR demo database (src/sophrosyne/data/demo.sqlite) deterministically."""

import random
import sqlite3
import sys
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

SEED = 20251212
SNAPSHOT = date(2025, 12, 12)  # the "today" of the demo data; nothing after it is recorded as fact
YEAR_START = date(2025, 1, 1)
LEAVE_HORIZON = date(2026, 1, 30)  # leave can be approved in advance up to here
ATTENDANCE_START = date(2025, 10, 1)
ATTENDANCE_END = date(2025, 11, 30)
EMAIL_DOMAIN = "meridian-logistics.example"
DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "src" / "sophrosyne" / "data" / "demo.sqlite"

SCHEMA = """
CREATE TABLE locations (
    location_id INTEGER PRIMARY KEY,
    city TEXT NOT NULL,
    country TEXT NOT NULL,
    site_type TEXT NOT NULL
);

CREATE TABLE departments (
    dept_code TEXT PRIMARY KEY,
    dept_name TEXT NOT NULL UNIQUE,
    cost_center TEXT,
    location_id INTEGER NOT NULL REFERENCES locations (location_id)
);

CREATE TABLE employees (
    employee_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT UNIQUE,
    department TEXT NOT NULL REFERENCES departments (dept_code),
    job_title TEXT NOT NULL,
    hire_date DATE NOT NULL,
    manager_id INTEGER REFERENCES employees (employee_id),
    salary_band TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'terminated')),
    termination_date DATE,
    location_id INTEGER NOT NULL REFERENCES locations (location_id)
);
CREATE INDEX ix_employees_department ON employees (department);
CREATE INDEX ix_employees_manager ON employees (manager_id);

CREATE TABLE attendance (
    employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
    date DATE NOT NULL,
    check_in TEXT,
    check_out TEXT,
    status TEXT NOT NULL CHECK (status IN ('present', 'remote', 'absent')),
    PRIMARY KEY (employee_id, date)
);

CREATE TABLE approved_leave (
    leave_id INTEGER PRIMARY KEY,
    employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
    start_date DATE NOT NULL,
    end_date DATE NOT NULL,
    leave_type TEXT NOT NULL,
    approved_by INTEGER REFERENCES employees (employee_id),
    approved_on DATE NOT NULL
);
CREATE INDEX ix_approved_leave_employee ON approved_leave (employee_id, start_date);

CREATE TABLE absence_records (
    absence_id INTEGER PRIMARY KEY,
    employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
    absence_date DATE NOT NULL,
    reason_code TEXT NOT NULL,
    reported_by INTEGER REFERENCES employees (employee_id),
    approved INTEGER NOT NULL CHECK (approved IN (0, 1))
);
CREATE INDEX ix_absence_records_employee ON absence_records (employee_id, absence_date);

CREATE TABLE salaries (
    salary_id INTEGER PRIMARY KEY,
    employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
    effective_date DATE NOT NULL,
    annual_salary REAL NOT NULL,
    currency TEXT NOT NULL
);
CREATE INDEX ix_salaries_employee ON salaries (employee_id, effective_date);

CREATE TABLE training_courses (
    course_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    category TEXT NOT NULL,
    provider TEXT NOT NULL,
    duration_hours REAL NOT NULL,
    mandatory INTEGER NOT NULL CHECK (mandatory IN (0, 1))
);

CREATE TABLE training_enrollments (
    enrollment_id INTEGER PRIMARY KEY,
    employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
    course_id INTEGER NOT NULL REFERENCES training_courses (course_id),
    enrolled_on DATE NOT NULL,
    completed_on DATE,
    score REAL
);

CREATE TABLE equipment_assets (
    asset_tag TEXT PRIMARY KEY,
    employee_id INTEGER REFERENCES employees (employee_id),
    category TEXT NOT NULL,
    model TEXT NOT NULL,
    purchase_date DATE NOT NULL,
    assigned_on DATE,
    location_id INTEGER NOT NULL REFERENCES locations (location_id)
);

CREATE TABLE job_postings (
    posting_id INTEGER PRIMARY KEY,
    dept_code TEXT NOT NULL REFERENCES departments (dept_code),
    title TEXT NOT NULL,
    location_id INTEGER NOT NULL REFERENCES locations (location_id),
    hiring_manager_id INTEGER REFERENCES employees (employee_id),
    salary_band TEXT NOT NULL,
    opened_on DATE NOT NULL,
    closed_on DATE,
    status TEXT NOT NULL CHECK (status IN ('open', 'filled', 'cancelled'))
);

CREATE TABLE performance_reviews (
    review_id INTEGER PRIMARY KEY,
    employee_id INTEGER NOT NULL REFERENCES employees (employee_id),
    reviewer_id INTEGER REFERENCES employees (employee_id),
    review_period TEXT NOT NULL,
    rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    submitted_on DATE NOT NULL
);
"""

TABLES = [
    "locations",
    "departments",
    "employees",
    "attendance",
    "approved_leave",
    "absence_records",
    "salaries",
    "training_courses",
    "training_enrollments",
    "equipment_assets",
    "job_postings",
    "performance_reviews",
]

# location_id, city, country, site_type
LOCATIONS: list[tuple[int, str, str, str]] = [
    (1, "Rotterdam", "Netherlands", "headquarters"),
    (2, "Antwerp", "Belgium", "distribution_center"),
    (3, "Hamburg", "Germany", "warehouse"),
    (4, "Lyon", "France", "office"),
    (5, "Dublin", "Ireland", "office"),
    (6, "Warsaw", "Poland", "office"),
    (7, "Barcelona", "Spain", "office"),
    (8, "Duisburg", "Germany", "warehouse"),
]
BADGE_SITES = {2, 8}  # the two logistics sites whose badge readers feed the attendance table
CURRENCY = {6: "PLN"}  # everyone else is paid in EUR
PLN_PER_EUR = 4.3


@dataclass(frozen=True)
class Department:
    code: str
    name: str
    cost_center: str | None
    location_id: int
    size: int
    sites: tuple[int, ...]  # where its people sit, the first one being the department's home site
    head_title: str
    lead_title: str
    staff_titles: tuple[str, ...]


DEPARTMENTS: list[Department] = [
    Department(
        "D055", "Corporate Strategy", "CC-5500", 1, 8, (1,),
        "Chief Executive Officer", "Chief of Staff",
        ("Strategy Analyst", "Senior Strategy Analyst", "Executive Assistant"),
    ),
    Department(
        "D042", "Operations and Logistics", "CC-4200", 2, 80, (2, 3, 8),
        "Director of Operations and Logistics", "Shift Supervisor",
        ("Warehouse Associate", "Logistics Coordinator", "Forklift Operator", "Inventory Controller",
         "Dispatch Planner", "Picker"),
    ),
    Department(
        "D017", "IT Operations", "CC-1700", 5, 40, (5, 1),
        "Head of IT Operations", "IT Operations Team Lead",
        ("Systems Administrator", "Service Desk Analyst", "Network Engineer", "Site Reliability Engineer"),
    ),
    Department(
        "D063", "Field Operations", "CC-6300", 8, 55, (8, 3, 4),
        "Head of Field Operations", "Field Team Lead",
        ("Field Technician", "Field Service Engineer", "Route Planner", "Installation Specialist"),
    ),
    Department(
        "D011", "Finance", "CC-1100", 1, 35, (1, 6),
        "Chief Financial Officer", "Finance Team Lead",
        ("Accountant", "Financial Analyst", "Accounts Payable Clerk", "Controller"),
    ),
    Department(
        "D014", "Human Resources", "CC-1400", 1, 24, (1, 6),
        "Head of Human Resources", "HR Business Partner Lead",
        ("HR Business Partner", "Recruiter", "Payroll Specialist", "HR Administrator"),
    ),
    Department(
        "D021", "Sales", "CC-2100", 1, 75, (1, 4, 7),
        "VP Sales", "Regional Sales Manager",
        ("Account Executive", "Sales Development Representative", "Key Account Manager"),
    ),
    Department(
        "D023", "Marketing", "CC-2300", 7, 25, (7, 1),
        "Head of Marketing", "Marketing Team Lead",
        ("Marketing Specialist", "Content Writer", "Brand Manager", "Digital Marketing Analyst"),
    ),
    Department(
        "D027", "Legal", "CC-2700", 1, 10, (1,),
        "General Counsel", "Senior Legal Counsel", ("Legal Counsel", "Paralegal", "Compliance Officer"),
    ),
    Department(
        "D031", "Research and Development", "CC-3100", 4, 65, (4, 5),
        "VP Research and Development", "Engineering Manager",
        ("Software Engineer", "Senior Software Engineer", "Data Engineer", "QA Engineer", "Product Designer"),
    ),
    Department(
        "D035", "Customer Support", "CC-3500", 6, 90, (6, 7),
        "Head of Customer Support", "Support Team Lead",
        ("Customer Support Agent", "Senior Support Agent", "Support Quality Analyst"),
    ),
    Department(
        "D038", "Procurement", "CC-3800", 2, 18, (2, 1),
        "Head of Procurement", "Procurement Team Lead", ("Buyer", "Category Manager", "Supplier Analyst"),
    ),
    Department(
        "D046", "Quality Assurance", "CC-4600", 3, 25, (3, 2),
        "Head of Quality Assurance", "Quality Team Lead",
        ("Quality Inspector", "Quality Engineer", "Auditor"),
    ),
    Department(
        "D051", "Facilities Management", None, 2, 20, (2, 1, 8),
        "Head of Facilities", "Facilities Supervisor",
        ("Facilities Technician", "Maintenance Engineer", "Health and Safety Officer"),
    ),
    Department(
        "D058", "Data and Analytics", None, 1, 30, (1, 5),
        "Head of Data and Analytics", "Analytics Team Lead",
        ("Data Analyst", "Data Scientist", "BI Developer", "Analytics Engineer"),
    ),
]  # fmt: skip

FIRST_NAMES = (
    "Emma", "Liam", "Sophie", "Lucas", "Julia", "Noah", "Anna", "Daan", "Eva", "Finn", "Lotte", "Sem",
    "Mila", "Levi", "Sara", "Thomas", "Laura", "Jonas", "Marie", "Louis", "Chloe", "Hugo", "Camille",
    "Arthur", "Lea", "Jules", "Ines", "Paul", "Clara", "Max", "Lena", "Felix", "Hannah", "Leon", "Mia",
    "Elias", "Lisa", "Ben", "Katharina", "Jan", "Aoife", "Sean", "Niamh", "Conor", "Ciara", "Patrick",
    "Zofia", "Jakub", "Maja", "Kacper", "Natalia", "Piotr", "Lucia", "Pablo", "Marta", "Alejandro",
    "Carmen", "Javier", "Elena", "Diego", "Nora", "Oscar", "Ingrid", "Erik", "Alice", "Victor", "Helena",
    "Tomas", "Ana", "Marco", "Giulia", "Luca", "Rosa", "David", "Olivia", "Samuel", "Amira", "Youssef",
    "Fatima", "Omar",
)  # fmt: skip
LAST_NAMES = (
    "de Jong", "Jansen", "de Vries", "van den Berg", "Bakker", "Visser", "Smit", "Meijer", "Mulder",
    "Peeters", "Maes", "Jacobs", "Willems", "Claes", "Dubois", "Martin", "Bernard", "Moreau", "Laurent",
    "Lefebvre", "Girard", "Mercier", "Muller", "Schmidt", "Schneider", "Fischer", "Weber", "Wagner",
    "Becker", "Hoffmann", "Koch", "Murphy", "Kelly", "O'Brien", "Byrne", "Walsh", "Ryan", "Nowak",
    "Kowalski", "Wisniewski", "Wojcik", "Kaminski", "Lewandowski", "Garcia", "Martinez", "Lopez", "Sanchez",
    "Perez", "Gomez", "Fernandez", "Rossi", "Bianchi", "Ricci", "Novak", "Horvat", "Lindqvist", "Andersen",
    "Nielsen", "Hansen", "Costa", "Silva", "Santos", "Haddad", "Benali", "El Amrani", "Yilmaz", "Demir",
)  # fmt: skip

# band: (min, max) annual salary in EUR
BANDS: dict[str, tuple[int, int]] = {
    "B1": (28000, 36000),
    "B2": (34000, 46000),
    "B3": (44000, 60000),
    "B4": (58000, 78000),
    "B5": (75000, 98000),
    "B6": (95000, 135000),
    "B7": (130000, 220000),
}

# title, category, provider, duration_hours, mandatory, graded
COURSES: list[tuple[str, str, str, float, int, bool]] = [
    ("Code of Conduct", "compliance", "internal", 1.5, 1, False),
    ("GDPR Essentials", "compliance", "internal", 2.0, 1, True),
    ("Workplace Health and Safety", "safety", "internal", 3.0, 1, True),
    ("Forklift Safety Certification", "safety", "SafeLift Academy", 16.0, 0, True),
    ("Hazardous Goods Handling", "safety", "SafeLift Academy", 8.0, 0, True),
    ("First Aid at Work", "safety", "Red Cross", 12.0, 0, True),
    ("Lean Warehouse Operations", "operations", "Supply Chain Institute", 14.0, 0, True),
    ("Route Optimisation Basics", "operations", "Supply Chain Institute", 6.0, 0, True),
    ("ITIL 4 Foundation", "technical", "Axelos", 21.0, 0, True),
    ("Cloud Infrastructure Fundamentals", "technical", "Coursera", 18.0, 0, True),
    ("SQL for Analysts", "technical", "internal", 10.0, 0, True),
    ("Python for Data Analysis", "technical", "Coursera", 24.0, 0, True),
    ("Negotiation Skills", "business", "Harvard ManageMentor", 6.0, 0, False),
    ("Customer Conversations", "business", "internal", 4.0, 0, False),
    ("Financial Literacy for Managers", "business", "internal", 5.0, 0, True),
    ("Leading Teams", "leadership", "INSEAD Online", 20.0, 0, False),
    ("Giving Feedback", "leadership", "internal", 3.0, 0, False),
    ("Unconscious Bias Awareness", "diversity", "internal", 1.5, 0, False),
    ("Time Management", "personal development", "LinkedIn Learning", 2.5, 0, False),
    ("Presentation Skills", "personal development", "LinkedIn Learning", 3.5, 0, False),
]

# category: models
EQUIPMENT_MODELS: dict[str, tuple[str, ...]] = {
    "laptop": ("Dell Latitude 5440", "Lenovo ThinkPad T14", "HP EliteBook 840", "Apple MacBook Pro 14"),
    "monitor": ("Dell P2723DE", "LG 27UP850", "Philips 272B1G"),
    "mobile_phone": ("Apple iPhone 14", "Samsung Galaxy S23", "Google Pixel 8"),
    "handheld_scanner": ("Zebra TC52", "Honeywell CT45", "Zebra MC3300"),
    "tablet": ("Samsung Galaxy Tab Active4", "Apple iPad 10th gen"),
    "vehicle": ("Ford Transit Custom", "Volkswagen Crafter", "Renault Kangoo E-Tech"),
}

# no-show, unexplained absence, late arrival, left early, sick but not reported in time
ABSENCE_REASONS = ("NS", "UNK", "LATE", "EARLY", "SNR")
ABSENCE_WEIGHTS = (30, 25, 30, 10, 5)


@dataclass
class Person:
    first_name: str
    last_name: str
    dept: Department
    level: str  # "ceo", "head", "lead" or "staff"
    job_title: str
    hire_date: date
    salary_band: str
    location_id: int
    manager: "Person | None" = None
    termination_date: date | None = None
    email: str | None = None
    employee_id: int = 0
    absence_propensity: float = 1.0
    busy: set[date] = field(default_factory=set)  # membership tests only: never iterated

    @property
    def manager_id(self) -> int | None:
        return self.manager.employee_id if self.manager else None

    def employed_on(self, day: date) -> bool:
        return self.hire_date <= day and (self.termination_date is None or day < self.termination_date)


def random_date(rng: random.Random, start: date, end: date) -> date:
    """A date in [start, end], both included."""
    return start + timedelta(days=rng.randint(0, (end - start).days))


def weekdays(start: date, end: date) -> list[date]:
    days = []
    day = start
    while day <= end:
        if day.weekday() < 5:
            days.append(day)
        day += timedelta(days=1)
    return days


def clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def build_people(rng: random.Random) -> list[Person]:
    people: list[Person] = []

    def person(dept: Department, level: str, title: str, hired: date, band: str) -> Person:
        site = dept.sites[0] if rng.random() < 0.6 else rng.choice(dept.sites)
        p = Person(rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES), dept, level, title, hired, band, site)
        people.append(p)
        return p

    strategy = DEPARTMENTS[0]
    ceo = person(strategy, "ceo", strategy.head_title, date(2007, 9, 3), "B7")
    ceo.location_id = strategy.location_id
    for dept in DEPARTMENTS:
        if dept is strategy:
            head = ceo
        else:
            band = rng.choice(("B6", "B7"))
            head = person(dept, "head", dept.head_title, random_date(rng, date(2008, 1, 1), date(2018, 12, 31)), band)
            head.location_id = dept.location_id
            head.manager = ceo
        n_leads = max(1, round((dept.size - 1) / 10))
        leads = []
        for _ in range(n_leads):
            hired = random_date(rng, date(2010, 1, 1), date(2021, 12, 31))
            lead = person(dept, "lead", dept.lead_title, hired, rng.choice(("B4", "B5")))
            lead.manager = head
            leads.append(lead)
        for i in range(dept.size - 1 - n_leads):
            hired = random_date(rng, date(2012, 1, 1), date(2025, 10, 27))
            band = rng.choices(("B1", "B2", "B3", "B4"), weights=(25, 40, 25, 10))[0]
            staff = person(dept, "staff", rng.choice(dept.staff_titles), hired, band)
            staff.manager = leads[i % n_leads]
            if rng.random() < 0.09 and hired < date(2025, 3, 1):
                staff.termination_date = random_date(
                    rng, max(hired + timedelta(days=150), date(2020, 1, 1)), date(2025, 11, 28)
                )
    for p in people:
        p.absence_propensity = rng.choices((0.5, 1.5, 4.0), weights=(70, 20, 10))[0]

    # ids in hiring order, like a real HR system would hand them out
    order = sorted(range(len(people)), key=lambda i: (people[i].hire_date, i))
    for rank, i in enumerate(order):
        people[i].employee_id = 1001 + rank
    people = [people[i] for i in order]

    taken: dict[str, int] = {}
    for p in people:
        local = f"{p.first_name}.{p.last_name}".lower().replace(" ", "").replace("'", "")
        taken[local] = taken.get(local, 0) + 1
        if taken[local] > 1:
            local = f"{local}{taken[local]}"
        p.email = None if rng.random() < 0.015 else f"{local}@{EMAIL_DOMAIN}"
    return people


def build_leave(rng: random.Random, people: list[Person], hr_head: Person) -> list[tuple[object, ...]]:
    rows: list[tuple[date, int, date, date, str, int | None, date]] = []
    window = weekdays(YEAR_START, LEAVE_HORIZON)

    def add(p: Person, leave_type: str, length: int, latest_end: date) -> None:
        candidates = [d for d in window if p.employed_on(d) and d <= latest_end]
        if not candidates:
            return
        start_index = window.index(rng.choice(candidates))
        block = window[start_index : start_index + length]
        if not block or block[-1] > latest_end or not p.employed_on(block[-1]):
            return
        if any(d in p.busy for d in block):
            return
        p.busy.update(block)
        start, end = block[0], block[-1]
        if leave_type in ("sick", "bereavement"):
            approved_on = end + timedelta(days=rng.randint(0, 3))
        else:
            approved_on = min(start - timedelta(days=rng.randint(5, 45)), SNAPSHOT - timedelta(rng.randint(0, 9)))
        approver = p.manager or hr_head
        rows.append((start, p.employee_id, start, end, leave_type, approver.employee_id, approved_on))

    settled = SNAPSHOT - timedelta(days=3)
    for p in people:
        for _ in range(rng.randint(1, 3)):
            add(p, "vacation", rng.choice((1, 2, 3, 5, 5, 10)), LEAVE_HORIZON)
        if rng.random() < 0.5:
            add(p, "sick", rng.randint(1, 3), settled)
        if rng.random() < 0.15:
            add(p, "sick", rng.randint(1, 5), settled)
        if rng.random() < 0.025:
            add(p, "parental", rng.randint(40, 60), LEAVE_HORIZON)
        if rng.random() < 0.02:
            add(p, "bereavement", rng.randint(2, 3), settled)
        if rng.random() < 0.02:
            add(p, "unpaid", rng.randint(3, 10), LEAVE_HORIZON)
        if rng.random() < 0.05:
            add(p, "training", rng.randint(1, 2), LEAVE_HORIZON)
    rows.sort(key=lambda r: (r[6], r[1], r[2]))  # leave_id in approval order
    return [(i, *row[1:]) for i, row in enumerate(rows, start=1)]


def build_absences(
    rng: random.Random, people: list[Person]
) -> tuple[list[tuple[object, ...]], dict[tuple[int, date], str]]:
    """Unexplained absences and no-shows; returns the rows and, per (employee, day), the reason code."""
    rows: list[tuple[date, int, str, int | None, int]] = []
    days = weekdays(YEAR_START, SNAPSHOT - timedelta(days=1))
    ops = {"D042", "D017", "D063"}
    for p in people:
        for day in days:
            if not p.employed_on(day) or day in p.busy:
                continue
            rate = 0.008 * p.absence_propensity
            if p.dept.code in ops:
                rate *= 1.3
            if p.dept.code == "D042" and day.year == 2025 and day.month == 11:
                rate *= 3.0  # peak season at the distribution center: the demo's question is about it
            if rng.random() >= rate:
                continue
            reason = rng.choices(ABSENCE_REASONS, weights=ABSENCE_WEIGHTS)[0]
            by_badge = reason == "UNK" or rng.random() < 0.2
            reported_by = None if by_badge or p.manager is None else p.manager.employee_id
            approved = 1 if rng.random() < 0.18 else 0
            rows.append((day, p.employee_id, reason, reported_by, approved))
    rows.sort(key=lambda r: (r[0], r[1]))
    out: list[tuple[object, ...]] = [(i, r[1], r[0], r[2], r[3], r[4]) for i, r in enumerate(rows, start=1)]
    return out, {(r[1], r[0]): r[2] for r in rows}


def build_attendance(
    rng: random.Random, people: list[Person], reasons: dict[tuple[int, date], str]
) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    days = weekdays(ATTENDANCE_START, ATTENDANCE_END)
    for p in people:
        if p.location_id not in BADGE_SITES:
            continue
        remote_share = 0.03 if p.dept.code in ("D042", "D063") else 0.2
        for day in days:
            if not p.employed_on(day):
                continue
            reason = reasons.get((p.employee_id, day))
            if day in p.busy or reason in ("NS", "UNK", "SNR"):
                rows.append((p.employee_id, day, None, None, "absent"))
                continue
            check_in = int(rng.gauss(8 * 60 + 5, 15))
            check_out = int(rng.gauss(16 * 60 + 50, 20))
            if reason == "LATE":
                check_in = rng.randint(9 * 60 + 20, 11 * 60)
            if reason == "EARLY":
                check_out = rng.randint(12 * 60, 15 * 60)
            status = "remote" if rng.random() < remote_share else "present"
            out = None if rng.random() < 0.012 else clock(check_out)  # forgot to badge out
            rows.append((p.employee_id, day, clock(check_in), out, status))
    return rows


def build_salaries(rng: random.Random, people: list[Person]) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for p in people:
        low, high = BANDS[p.salary_band]
        amount = rng.uniform(low, low + (high - low) * 0.6)
        effective = max(p.hire_date, date(2022, 1, 1))
        history = [(effective, amount)]
        for year in (2023, 2024, 2025):
            raise_day = date(year, 4, 1)
            if raise_day > effective and p.employed_on(raise_day) and rng.random() < 0.8:
                amount = min(amount * rng.uniform(1.015, 1.06), high)
                history.append((raise_day, amount))
        currency = CURRENCY.get(p.location_id, "EUR")
        factor = PLN_PER_EUR if currency == "PLN" else 1.0
        for day, value in history:
            rows.append((p.employee_id, day, float(round(value * factor / 50) * 50), currency))
    return [(i, *row) for i, row in enumerate(rows, start=1)]


def build_training(rng: random.Random, people: list[Person]) -> list[tuple[object, ...]]:
    ids = {c[0]: i for i, c in enumerate(COURSES, start=1)}
    graded = {i for i, c in enumerate(COURSES, start=1) if c[5]}
    hours = {i: c[3] for i, c in enumerate(COURSES, start=1)}
    general = [ids[t] for t in ("Code of Conduct", "GDPR Essentials", "Unconscious Bias Awareness")]
    by_dept = {
        "D042": ["Forklift Safety Certification", "Hazardous Goods Handling", "Lean Warehouse Operations"],
        "D063": ["First Aid at Work", "Route Optimisation Basics", "Workplace Health and Safety"],
        "D017": ["ITIL 4 Foundation", "Cloud Infrastructure Fundamentals"],
        "D031": ["Cloud Infrastructure Fundamentals", "Python for Data Analysis", "SQL for Analysts"],
        "D058": ["SQL for Analysts", "Python for Data Analysis"],
        "D021": ["Negotiation Skills", "Customer Conversations", "Presentation Skills"],
        "D035": ["Customer Conversations", "Time Management"],
        "D051": ["Workplace Health and Safety", "First Aid at Work"],
        "D046": ["Workplace Health and Safety", "Hazardous Goods Handling"],
        "D011": ["Financial Literacy for Managers", "SQL for Analysts"],
        "D038": ["Negotiation Skills"],
    }
    rows: list[tuple[int, int, date, date | None, float | None]] = []
    for p in people:
        options = general + [ids[t] for t in by_dept.get(p.dept.code, [])]
        if p.level in ("head", "lead"):
            options += [ids["Leading Teams"], ids["Giving Feedback"], ids["Financial Literacy for Managers"]]
        options += [ids["Time Management"], ids["Presentation Skills"], ids["Workplace Health and Safety"]]
        options = sorted(dict.fromkeys(options))
        last_day = min(p.termination_date or SNAPSHOT, SNAPSHOT)
        first_day = max(p.hire_date, date(2023, 1, 1))
        if first_day >= last_day:
            continue
        for course in rng.sample(options, k=min(len(options), rng.randint(1, 4))):
            enrolled = random_date(rng, first_day, last_day)
            done = enrolled + timedelta(days=int(hours[course] * rng.uniform(0.5, 3)) + rng.randint(0, 20))
            completed = done if done <= last_day and rng.random() < 0.88 else None
            score = round(rng.uniform(55, 100), 1) if completed and course in graded else None
            rows.append((p.employee_id, course, enrolled, completed, score))
    rows.sort(key=lambda r: (r[2], r[0], r[1]))
    return [(i, *row) for i, row in enumerate(rows, start=1)]


def build_equipment(rng: random.Random, people: list[Person]) -> list[tuple[object, ...]]:
    rows: list[tuple[date, int | None, str, str, date | None, int]] = []
    floor = {"D042", "D063", "D051", "D046"}

    def assign(p: Person | None, category: str, location_id: int) -> None:
        model = rng.choice(EQUIPMENT_MODELS[category])
        if p is None:
            bought = random_date(rng, date(2023, 1, 1), SNAPSHOT - timedelta(days=10))
            rows.append((bought, None, category, model, None, location_id))
            return
        assigned = random_date(rng, max(p.hire_date, date(2021, 6, 1)), SNAPSHOT - timedelta(days=5))
        bought = assigned - timedelta(days=rng.randint(3, 120))
        rows.append((bought, p.employee_id, category, model, assigned, p.location_id))

    for p in people:
        if p.termination_date is not None:
            continue
        on_floor = p.dept.code in floor and p.level == "staff"
        if not on_floor or rng.random() < 0.25:
            assign(p, "laptop", p.location_id)
        if not on_floor and rng.random() < 0.5:
            assign(p, "monitor", p.location_id)
        if p.level != "staff" or p.dept.code in ("D063", "D021", "D017") or rng.random() < 0.1:
            assign(p, "mobile_phone", p.location_id)
        if p.dept.code == "D042" and p.level == "staff" and rng.random() < 0.8:
            assign(p, "handheld_scanner", p.location_id)
        if p.dept.code == "D063" and p.level == "staff":
            assign(p, "tablet", p.location_id)
            if rng.random() < 0.45:
                assign(p, "vehicle", p.location_id)
    for _ in range(45):  # spare stock, not assigned to anyone
        category = rng.choices(list(EQUIPMENT_MODELS), weights=(10, 6, 5, 6, 3, 1))[0]
        assign(None, category, rng.choice((1, 2, 3, 5, 8)))
    rows.sort(key=lambda r: (r[0], r[2], r[1] or 0))
    return [(f"AST-{10001 + i}", *row[1:4], row[0], *row[4:]) for i, row in enumerate(rows)]


def build_postings(rng: random.Random, people: list[Person]) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    managers: dict[str, list[Person]] = {}
    for p in people:
        if p.level in ("head", "lead", "ceo") and p.termination_date is None:
            managers.setdefault(p.dept.code, []).append(p)
    weights = [d.size for d in DEPARTMENTS]
    for _ in range(52):
        dept = rng.choices(DEPARTMENTS, weights=weights)[0]
        opened = random_date(rng, date(2024, 1, 8), SNAPSHOT - timedelta(days=2))
        age = (SNAPSHOT - opened).days
        status = "open" if age < 45 else rng.choices(("filled", "cancelled", "open"), weights=(75, 15, 10))[0]
        closed = None
        if status != "open":
            closed = min(opened + timedelta(days=rng.randint(20, 100)), SNAPSHOT - timedelta(days=1))
        manager = rng.choice(managers[dept.code]) if rng.random() < 0.95 else None
        band = rng.choices(("B1", "B2", "B3", "B4", "B5"), weights=(15, 35, 30, 15, 5))[0]
        site = dept.sites[0] if rng.random() < 0.7 else rng.choice(dept.sites)
        title = rng.choice(dept.staff_titles)
        rows.append((dept.code, title, site, manager.employee_id if manager else None, band, opened, closed, status))
    rows.sort(key=lambda r: (r[5], r[0]))
    return [(i, *row) for i, row in enumerate(rows, start=1)]


def build_reviews(rng: random.Random, people: list[Person]) -> list[tuple[object, ...]]:
    periods = [
        ("2024-H1", date(2024, 6, 30)),
        ("2024-H2", date(2024, 12, 31)),
        ("2025-H1", date(2025, 6, 30)),
    ]
    rows: list[tuple[object, ...]] = []
    for period, end in periods:
        for p in people:
            if p.manager is None or p.hire_date > end - timedelta(days=90):
                continue
            submitted = end + timedelta(days=rng.randint(7, 45))
            if not p.employed_on(submitted) or not p.manager.employed_on(submitted) or rng.random() < 0.05:
                continue
            rating = rng.choices((1, 2, 3, 4, 5), weights=(3, 12, 50, 28, 7))[0]
            rows.append((p.employee_id, p.manager.employee_id, period, rating, submitted))
    rows.sort(key=lambda r: (r[4], r[0]))
    return [(i, *row) for i, row in enumerate(rows, start=1)]


def iso(value: object) -> object:
    return value.isoformat() if isinstance(value, date) else value


def insert(db: sqlite3.Connection, table: str, rows: list[tuple[object, ...]]) -> None:
    if not rows:
        return
    marks = ", ".join("?" * len(rows[0]))
    db.executemany(f"INSERT INTO {table} VALUES ({marks})", [tuple(iso(v) for v in row) for row in rows])


def build(output: Path) -> dict[str, int]:
    """Write the demo database to output (replacing it) and return the row count of every table."""
    rng = random.Random(SEED)
    people = build_people(rng)
    hr_head = next(p for p in people if p.dept.code == "D014" and p.level == "head")

    leave = build_leave(rng, people, hr_head)
    absences, reasons = build_absences(rng, people)
    data: dict[str, list[tuple[object, ...]]] = {
        "locations": list(LOCATIONS),
        "departments": [
            (d.code, d.name, d.cost_center, d.location_id) for d in sorted(DEPARTMENTS, key=lambda d: d.code)
        ],
        "employees": [
            (
                p.employee_id,
                p.first_name,
                p.last_name,
                p.email,
                p.dept.code,
                p.job_title,
                p.hire_date,
                p.manager_id,
                p.salary_band,
                "terminated" if p.termination_date else "active",
                p.termination_date,
                p.location_id,
            )
            for p in people
        ],
        "attendance": build_attendance(rng, people, reasons),
        "approved_leave": leave,
        "absence_records": absences,
        "salaries": build_salaries(rng, people),
        "training_courses": [(i, *c[:5]) for i, c in enumerate(COURSES, start=1)],
        "training_enrollments": build_training(rng, people),
        "equipment_assets": build_equipment(rng, people),
        "job_postings": build_postings(rng, people),
        "performance_reviews": build_reviews(rng, people),
    }

    db = sqlite3.connect(":memory:")
    try:
        db.execute("PRAGMA page_size = 4096")
        db.executescript(SCHEMA)
        with db:
            for table in TABLES:
                insert(db, table, data[table])
        # checked once at the end: managers can be hired (and numbered) after their reports
        problems = db.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise RuntimeError(f"foreign keys do not resolve: {problems[:5]}")
        db.execute("ANALYZE")
        output.parent.mkdir(parents=True, exist_ok=True)
        output.unlink(missing_ok=True)
        # VACUUM INTO writes a fresh, compact file whose bytes depend only on the content (and on the
        # SQLite library version, which the file header records)
        db.execute("VACUUM INTO ?", (str(output),))
        counts = {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        db.close()
    return counts


def main(argv: list[str]) -> int:
    output = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUTPUT
    counts = build(output)
    for table, count in counts.items():
        print(f"{table:<22}{count:>7}")
    print(f"{'total':<22}{sum(counts.values()):>7}")
    print(f"{output} ({output.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
