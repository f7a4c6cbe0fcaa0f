//! `%EventDef` blocks (formats.md §C.2): which event an id stands for and where each field is.

/// The standard Paje events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    DefineContainerType,
    DefineStateType,
    DefineEventType,
    DefineVariableType,
    DefineLinkType,
    DefineEntityValue,
    CreateContainer,
    DestroyContainer,
    NewEvent,
    SetState,
    PushState,
    PopState,
    ResetState,
    SetVariable,
    AddVariable,
    SubVariable,
    StartLink,
    EndLink,
    TraceFile,
}

impl std::fmt::Display for Kind {
    /// The event's name as `%EventDef` writes it (`PajePushState`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Paje{self:?}")
    }
}

impl Kind {
    fn of(name: &[u8]) -> Option<Kind> {
        Some(match name {
            b"PajeDefineContainerType" => Kind::DefineContainerType,
            b"PajeDefineStateType" => Kind::DefineStateType,
            b"PajeDefineEventType" => Kind::DefineEventType,
            b"PajeDefineVariableType" => Kind::DefineVariableType,
            b"PajeDefineLinkType" => Kind::DefineLinkType,
            b"PajeDefineEntityValue" => Kind::DefineEntityValue,
            b"PajeCreateContainer" => Kind::CreateContainer,
            b"PajeDestroyContainer" => Kind::DestroyContainer,
            b"PajeNewEvent" => Kind::NewEvent,
            b"PajeSetState" => Kind::SetState,
            b"PajePushState" => Kind::PushState,
            b"PajePopState" => Kind::PopState,
            b"PajeResetState" => Kind::ResetState,
            b"PajeSetVariable" => Kind::SetVariable,
            b"PajeAddVariable" => Kind::AddVariable,
            b"PajeSubVariable" => Kind::SubVariable,
            b"PajeStartLink" => Kind::StartLink,
            b"PajeEndLink" => Kind::EndLink,
            b"PajeTraceFile" => Kind::TraceFile,
            _ => return None,
        })
    }

    /// The fields PajeNG requires (formats.md §C.2 table).
    fn mandatory(self) -> &'static [Role] {
        use Role::*;
        match self {
            Kind::DefineContainerType
            | Kind::DefineStateType
            | Kind::DefineEventType
            | Kind::DefineVariableType
            | Kind::DefineEntityValue => &[Name, Type],
            Kind::DefineLinkType => &[Name, Type, StartContainerType, EndContainerType],
            Kind::CreateContainer => &[Time, Name, Type, Container],
            Kind::DestroyContainer => &[Time, Name, Type],
            Kind::NewEvent
            | Kind::SetState
            | Kind::PushState
            | Kind::SetVariable
            | Kind::AddVariable
            | Kind::SubVariable => &[Time, Type, Container, Value],
            Kind::PopState | Kind::ResetState => &[Time, Type, Container],
            Kind::StartLink => &[Time, Type, Container, Value, StartContainer, Key],
            Kind::EndLink => &[Time, Type, Container, Value, EndContainer, Key],
            Kind::TraceFile => &[Container, Type, Filename],
        }
    }
}

/// What a field means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Time,
    Name,
    Alias,
    Type,
    Container,
    StartContainerType,
    EndContainerType,
    StartContainer,
    EndContainer,
    Value,
    Key,
    Color,
    Filename,
    /// SimGrid's message size on StartLink (`display-sizes`).
    Size,
    /// perfexpert's own record field (`pe.rs`, docs/paje.md).
    PeRecord,
    /// Any other (user-defined) field: carried, ignored.
    Extra,
}

const ROLES: usize = 15;

fn role_of(name: &[u8]) -> Role {
    match name {
        b"Time" => Role::Time,
        b"Name" => Role::Name,
        b"Alias" => Role::Alias,
        // old synonyms (PajeNG non-strict mode)
        b"Type" | b"ContainerType" | b"EntityType" => Role::Type,
        b"Container" => Role::Container,
        b"StartContainerType" | b"SourceContainerType" => Role::StartContainerType,
        b"EndContainerType" | b"DestContainerType" => Role::EndContainerType,
        b"StartContainer" | b"SourceContainer" => Role::StartContainer,
        b"EndContainer" | b"DestContainer" => Role::EndContainer,
        b"Value" => Role::Value,
        b"Key" => Role::Key,
        b"Color" => Role::Color,
        b"Filename" | b"File" => Role::Filename,
        b"Size" => Role::Size,
        b"PerfexpertRecord" => Role::PeRecord,
        _ => Role::Extra,
    }
}

/// One `%EventDef`: the event and the position of each field in its data lines.
#[derive(Clone, Debug)]
pub struct EventDef {
    pub kind: Kind,
    /// Number of fields a data line carries after the id.
    pub nfields: usize,
    /// Field position per role (`NO_FIELD` when absent).
    pos: [u8; ROLES],
    /// Line of the `%EventDef`.
    pub line: u64,
}

pub const NO_FIELD: u8 = u8::MAX;

impl EventDef {
    #[inline]
    pub fn at(&self, r: Role) -> usize {
        self.pos[r as usize] as usize
    }

    #[inline]
    pub fn has(&self, r: Role) -> bool {
        self.pos[r as usize] != NO_FIELD
    }

    /// A definition from its fields' roles in order (binary Paje's 999 events): checked
    /// like a `%EventDef` block. `line` is where it was found (a byte offset there).
    pub fn of_roles(kind: Kind, roles: &[Role], line: u64) -> Result<EventDef, String> {
        let mut p = Pending {
            kind,
            id: super::binary::id_of(kind).map_or(0, u64::from),
            line,
            fields: Vec::new(),
        };
        for &r in roles {
            if r != Role::Extra && p.fields.contains(&r) {
                return Err(format!("{kind} lists the field {r:?} twice"));
            }
            if p.fields.len() >= NO_FIELD as usize {
                return Err("too many fields".into());
            }
            p.fields.push(r);
        }
        Ok(p.end()?.1)
    }

    /// The role of each field, in order.
    pub fn roles(&self) -> Vec<Role> {
        let mut v = vec![Role::Extra; self.nfields];
        for (r, &p) in self.pos.iter().enumerate() {
            if p != NO_FIELD {
                v[p as usize] = ROLE_LIST[r];
            }
        }
        v
    }
}

/// The roles in their `Role as usize` order (all but `Extra`).
const ROLE_LIST: [Role; ROLES] = [
    Role::Time,
    Role::Name,
    Role::Alias,
    Role::Type,
    Role::Container,
    Role::StartContainerType,
    Role::EndContainerType,
    Role::StartContainer,
    Role::EndContainer,
    Role::Value,
    Role::Key,
    Role::Color,
    Role::Filename,
    Role::Size,
    Role::PeRecord,
];

/// A `%EventDef` being read.
#[derive(Debug)]
pub struct Pending {
    kind: Kind,
    id: u64,
    line: u64,
    fields: Vec<Role>,
}

/// Start a definition from the words after `%EventDef`. Err = what is wrong.
pub fn begin(words: &[&[u8]], line: u64) -> Result<Pending, String> {
    let [name, id] = words else {
        return Err(format!(
            "expected '%EventDef <PajeEventName> <id>', found {} word(s)",
            words.len()
        ));
    };
    let kind = Kind::of(name).ok_or_else(|| {
        format!(
            "unknown Paje event '{}' (expected one of the standard Paje events, PajeSetState, ...)",
            String::from_utf8_lossy(name)
        )
    })?;
    let id = super::lex::uint(id).ok_or_else(|| {
        format!(
            "event id '{}' is not a non-negative integer",
            String::from_utf8_lossy(id)
        )
    })?;
    Ok(Pending {
        kind,
        id,
        line,
        fields: Vec::new(),
    })
}

impl Pending {
    /// Line of the `%EventDef`.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// A `% <FieldName> <type>` line.
    pub fn field(&mut self, words: &[&[u8]]) -> Result<(), String> {
        let [name, ty] = words else {
            return Err(format!(
                "expected '% <FieldName> <type>' inside %EventDef, found {} word(s)",
                words.len()
            ));
        };
        const TYPES: [&[u8]; 7] = [
            b"date", b"int", b"double", b"float", b"hex", b"string", b"color",
        ];
        if !TYPES.contains(ty) {
            return Err(format!(
                "unknown field type '{}' (expected date, int, double, float, hex, string or color)",
                String::from_utf8_lossy(ty)
            ));
        }
        let role = role_of(name);
        if role != Role::Extra && self.fields.contains(&role) {
            return Err(format!(
                "field '{}' given twice",
                String::from_utf8_lossy(name)
            ));
        }
        if self.fields.len() >= NO_FIELD as usize {
            return Err("too many fields".into());
        }
        self.fields.push(role);
        Ok(())
    }

    /// `%EndEventDef`: check the mandatory fields.
    pub fn end(self) -> Result<(u64, EventDef), String> {
        let mut pos = [NO_FIELD; ROLES];
        for (i, r) in self.fields.iter().enumerate() {
            if *r != Role::Extra {
                pos[*r as usize] = i as u8;
            }
        }
        for r in self.kind.mandatory() {
            if pos[*r as usize] == NO_FIELD {
                return Err(format!(
                    "the definition of {} (id {}) lacks the mandatory field {:?}",
                    self.kind, self.id, r
                ));
            }
        }
        Ok((
            self.id,
            EventDef {
                kind: self.kind,
                nfields: self.fields.len(),
                pos,
                line: self.line,
            },
        ))
    }
}
